// Sink `influxdb`: each batch is one line-protocol write, to the v2 API (/api/v2/write: InfluxDB 2.x,
// Cloud, 1.8+) or, with `api: v1`, to InfluxDB 1.x's /write (Telegraf's outputs.influxdb_v2 and
// outputs.influxdb). Records the sink cannot turn into a line, and lines the server refuses
// (a partial write: a field type conflict, a line that does not parse), are reported per record
// and dead-lettered by the runtime while the rest count as written; a 5xx, 429 or a lost
// connection fails the batch for the runtime to retry; wrong credentials or a missing bucket fail it for good.
import { Type, type Static } from '@sinclair/typebox';
import { WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { defineSink, type LintIssue, type WriteResult } from '../../types.js';
import { InfluxHttp, isHttpError, isOld1x, networkError, oneLine, serverFields, serverMessage, target, versionOf, type HttpError } from './client.js';
import { loadLineProtocol, measurementProblem, toLine, type Line, type LineOptions } from './line-protocol.js';
import { refusedLines } from './partial-write.js';

const config = Type.Object(
  {
    ...serverFields,
    bucket: Type.String({ minLength: 1, description: 'Bucket name (or ID). With api: v1, the database, or `database/retention_policy`.' }),
    measurement: Type.String({ minLength: 1, description: 'Measurement of every point written.' }),
    tag_fields: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Record fields written as tags (their values as text; null, missing or empty ones are left out).',
    }),
    timestamp_field: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Record field holding the point time: a number or digit string in `precision` units since the epoch, or an RFC 3339 date-time (no offset = UTC). Unset: the server stamps each point with its receive time.',
      }),
    ),
    precision: Type.Union([Type.Literal('s'), Type.Literal('ms'), Type.Literal('us'), Type.Literal('ns')], {
      default: 's',
      description: 'Unit of the written timestamps (and of numeric timestamp_field values); date-times are truncated to it.',
    }),
    float_fields: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description:
        'Fields always written as floats, even when a value is whole (else a whole number is an integer field and InfluxDB refuses a later 2.5 in that field). Our extension of doc 3.',
    }),
    api: Type.Union([Type.Literal('v2'), Type.Literal('v1')], {
      default: 'v2',
      description:
        '`v2`: /api/v2/write with org and bucket (InfluxDB 2.x, Cloud, 1.8+). `v1`: /write of InfluxDB 1.x (before 1.8, which has no v2 API): bucket is the database, token is `username:password` (basic auth), org is not used. Our extension of doc 3.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out: LintIssue[] = [];
  const m = measurementProblem(c.measurement);
  if (m) out.push({ path: 'measurement', message: m });
  if (c.timestamp_field !== undefined && c.tag_fields.includes(c.timestamp_field))
    out.push({ path: 'timestamp_field', message: `'${c.timestamp_field}' is also in tag_fields: a field is either the time or a tag` });
  for (const f of c.float_fields)
    if (c.tag_fields.includes(f)) out.push({ path: 'float_fields', message: `'${f}' is in tag_fields: tags are text, not floats` });
  if (c.api === 'v1' && !c.token.includes(':'))
    out.push({ path: 'token', message: 'with api: v1 the token is username:password (any pair, for a server without authentication)' });
  return out;
}

/** Where a write goes: the endpoint path with its query string, and how to authenticate. */
export function writeEndpoint(c: Config): { path: string; auth: { token: string } | { basic: string } } {
  if (c.api === 'v1') {
    const slash = c.bucket.indexOf('/');
    const [db, rp] = slash > 0 ? [c.bucket.slice(0, slash), c.bucket.slice(slash + 1)] : [c.bucket, ''];
    const q = new URLSearchParams({ db, ...(rp ? { rp } : {}), precision: c.precision === 'us' ? 'u' : c.precision });
    return { path: `/write?${q}`, auth: { basic: c.token } };
  }
  return { path: `/api/v2/write?${new URLSearchParams({ org: c.org, bucket: c.bucket, precision: c.precision })}`, auth: { token: c.token } };
}

/** A failure without an HTTP answer: the connection is dropped and opened again by the next attempt. */
class Broken extends Error {}

/** Why an HTTP error answer is final, or undefined when a retry may help (5xx, 429). */
function finalReason(c: Config, e: HttpError, where: string): string | undefined {
  const s = e.statusCode;
  const msg = oneLine(serverMessage(e));
  if (s === 401 || s === 403) return `${where} answered ${s}: ${msg} (check the token${c.api === 'v1' ? ' (username:password)' : ''} and its write permission)`;
  if (s === 404) {
    const version = versionOf(e.headers as Record<string, unknown>);
    if (c.api === 'v2' && /page not found/i.test(msg)) {
      return `${where} answered 404 (${msg}): the server${version ? ` (InfluxDB ${version})` : ''} has no v2 API${isOld1x(version) ? ': set api: v1' : ''}`;
    }
    return `${where} answered 404: ${msg} (check ${c.api === 'v1' ? 'bucket (the database)' : 'org and bucket'})`;
  }
  if (s === 413) return `${where} answered 413: ${msg} (the batch is too large: lower record_chunk_size)`;
  // 1.x answers a retention policy that does not exist with a 500.
  if (/retention policy not found/i.test(msg)) return `${where} answered ${s}: ${msg} (check bucket: database/retention_policy)`;
  if (s >= 500 || s === 429 || s === 408) return undefined;
  return `${where} answered ${s}: ${msg}`;
}

export default defineSink({
  key: 'influxdb',
  summary: 'Write records as InfluxDB line protocol (v2 API, or /write of 1.x), refused lines dead-lettered on their own.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch counts as written once InfluxDB answered its write; a lost connection or a 5xx retries the whole batch. With timestamp_field a repeated point overwrites itself (same measurement, tags and time), so retries leave no duplicates; without it, a retried point gets a new server time.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Interface counters into InfluxDB 2.x, tagged by device and interface',
      yaml: 'type: influxdb\nurl: http://influxdb.internal:8086\ntoken: ${INFLUX_TOKEN:-change-me}\norg: noc\nbucket: telemetry\nmeasurement: ifcounters\ntag_fields: [device, ifName]\ntimestamp_field: polled_at\nprecision: ms\nfloat_fields: [utilization]',
    },
    {
      title: 'An InfluxDB 1.6 server (no v2 API): database and retention policy',
      yaml: 'type: influxdb\nurl: http://influx1.internal:8086\napi: v1\ntoken: ${INFLUX_USER_PASSWORD:-svc:change-me}\norg: unused\nbucket: telegraf/autogen\nmeasurement: alarms\ntag_fields: [site]',
    },
  ],
  // An empty write: the server checks the token, org, bucket and write permission and refuses the
  // empty body (2.x: 400 "writing requires points") or takes it (1.x: 204); nothing is written.
  async test(c) {
    const { path, auth } = writeEndpoint(c);
    const where = `${target(c.url)}${path.slice(0, path.indexOf('?'))}`;
    const h = await InfluxHttp.open(c.url, auth);
    try {
      await h.send(path, '', 'POST', { 'content-type': 'text/plain; charset=utf-8' });
    } catch (e) {
      if (!isHttpError(e)) throw new Error(networkError(e, where), { cause: e });
      if (e.statusCode === 400 && /writing requires points/.test(serverMessage(e))) return;
      throw new Error(finalReason(c, e, where) ?? `${where} answered ${e.statusCode}: ${oneLine(serverMessage(e))}`, { cause: e });
    } finally {
      h.close();
    }
  },
  create(c, ctx) {
    const { path, auth } = writeEndpoint(c);
    const where = `${target(c.url)}${path.slice(0, path.indexOf('?'))}`;
    const opts: LineOptions = {
      measurement: c.measurement,
      tagFields: new Set(c.tag_fields),
      timestampField: c.timestamp_field,
      precision: c.precision,
      floatFields: new Set(c.float_fields),
    };
    // "Connected" once the server answered a ping: reachable, whatever the credentials (a write tells).
    const link = new Connection<InfluxHttp>(
      ctx,
      'influxdb',
      async () => {
        const h = await InfluxHttp.open(c.url, auth);
        try {
          await h.send('/ping', '', 'GET', {}, ctx.signal);
        } catch (e) {
          h.close();
          if (!isHttpError(e)) throw new Error(networkError(e, target(c.url)), { cause: e });
        }
        return h;
      },
      async (h) => h.close(),
    );

    /** The result of a refused write: refused lines as rejected records, or the batch failed. */
    function answered(e: HttpError, lines: Line[], index: number[], rejected: NonNullable<WriteResult['rejected']>): WriteResult {
      const s = e.statusCode;
      const msg = oneLine(serverMessage(e));
      if (s !== 400 && s !== 422) {
        const final = finalReason(c, e, where);
        if (final) throw new WriteError(`influxdb: ${final}`, false);
        throw new Error(`${where} answered ${s}: ${msg}`); // retried, on the same connection
      }
      const refused = refusedLines(lines, { status: s, message: serverMessage(e), json: e.json });
      if (!refused) {
        if (s === 400 && !/partial write/i.test(msg)) throw new WriteError(`influxdb: ${where} answered 400: ${msg}`, false);
        // Part of the batch was written, but the answer does not say which lines were not.
        for (const i of index)
          rejected.push({
            index: i,
            reason: `influxdb: the server refused some lines of the batch without naming them (${msg}); the whole batch is dead-lettered, some of it may have been written`,
          });
        return { rejected };
      }
      for (const [line, why] of refused.lines) rejected.push({ index: index[line]!, reason: `influxdb refused the line: ${oneLine(why)}` });
      const retry = refused.othersWritten
        ? []
        : index
            .filter((_, line) => !refused.lines.has(line))
            .map((i) => ({ index: i, reason: `influxdb refused the whole batch because of other lines: ${msg}` }));
      return { rejected, retry };
    }

    return {
      async write(batch) {
        const records = batch.records!;
        await loadLineProtocol();
        const rejected: NonNullable<WriteResult['rejected']> = [];
        const lines: Line[] = [];
        const index: number[] = [];
        records.forEach((r, i) => {
          const l = toLine(r, opts);
          if ('refused' in l) rejected.push({ index: i, reason: `influxdb: ${l.refused}` });
          else {
            lines.push(l);
            index.push(i);
          }
        });
        if (lines.length === 0) return rejected.length ? { rejected } : undefined;
        const body = lines.map((l) => l.text).join('\n');
        return link.use(
          async (h) => {
            try {
              await h.send(path, body, 'POST', { 'content-type': 'text/plain; charset=utf-8' }, ctx.signal);
            } catch (e) {
              if (!isHttpError(e)) throw new Broken(networkError(e, where), { cause: e });
              return answered(e, lines, index, rejected);
            }
            return { rejected, bytes: Buffer.byteLength(body) };
          },
          (e) => e instanceof Broken,
        );
      },
      close: () => link.end(),
    };
  },
});
