// Source `influxdb` (batch): one Flux query per run through the v2 query API (/api/v2/query:
// InfluxDB 2.x, Cloud, 1.8+ with flux-enabled). The annotated CSV answer is read as it streams;
// each row of each table is one record (a message decoded on its own by serializer_in, json by
// default) holding every column but the annotation columns `result` and `table`, typed as the
// #datatype annotation says (long and double as numbers, boolean, dateTime as RFC 3339 text).
import { Type } from '@sinclair/typebox';
import type { Row } from '@influxdata/influxdb-client';
import { SourceError } from '../../../core/errors.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { defineSource } from '../../types.js';
import { InfluxHttp, isHttpError, isOld1x, networkError, oneLine, serverFields, serverMessage, target, versionOf, type ServerConfig } from './client.js';

const config = Type.Object(
  {
    ...serverFields,
    query: Type.String({
      minLength: 1,
      description: 'The Flux query (`from(bucket: "telemetry") |> range(start: -1h) |> ...`); pivot() gives one record per time with a column per field.',
    }),
  },
  { additionalProperties: false },
);

/** A refused query in words a user can act on. */
function describe(c: ServerConfig, e: unknown): string {
  const where = `${target(c.url)}/api/v2/query`;
  if (!isHttpError(e)) return networkError(e, where);
  const msg = oneLine(serverMessage(e));
  const s = e.statusCode;
  if (s === 401 || s === 403) return `${where} answered ${s}: ${msg} (check the token and its read permission)`;
  if (s === 404 && /page not found/i.test(msg)) {
    const version = versionOf(e.headers as Record<string, unknown>);
    return `${where} answered 404: the server${version ? ` (InfluxDB ${version})` : ''} has no Flux query API${isOld1x(version) || version?.startsWith('1.') ? ': Flux needs InfluxDB 2.x, or 1.8+ with flux-enabled = true' : ''}`;
  }
  return `${where} answered ${s}: ${msg}`;
}

/** A row as a record: the annotation columns left out. */
function record(r: Row): Buffer {
  const o = r.tableMeta.toObject(r.values);
  delete o.result;
  delete o.table;
  return Buffer.from(JSON.stringify(o));
}

export default defineSource({
  key: 'influxdb',
  summary: 'Run a Flux query on InfluxDB (v2 query API) and stream its rows, one record each.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a query consumes nothing: a run that fails (query error, lost connection, a sink failure) leaves the data as it was and the next run reads it again, so rows can be read twice but none is dropped by the source.',
  },
  config,
  examples: [
    {
      title: 'The last hour of interface counters, one record per device, interface and time',
      yaml: 'type: influxdb\nurl: http://influxdb.internal:8086\ntoken: ${INFLUX_TOKEN:-change-me}\norg: noc\nquery: |\n  from(bucket: "telemetry")\n    |> range(start: -1h)\n    |> filter(fn: (r) => r._measurement == "ifcounters")\n    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")',
    },
  ],
  // A query of the bucket list, limited to one row: reachability, token, org and the Flux API,
  // without reading data.
  async test(c, { signal }) {
    const h = await InfluxHttp.open(c.url, { token: c.token });
    try {
      for await (const _ of h.db.getQueryApi({ org: c.org, type: 'flux' }).iterateRows('buckets() |> limit(n: 1)')) {
        if (signal.aborted) break;
      }
    } catch (e) {
      throw new Error(describe(c, e), { cause: e });
    } finally {
      h.close();
    }
  },
  create(c, ctx) {
    const report = connectionReporter(ctx, 'influxdb');
    let h: InfluxHttp | undefined;
    return {
      async *units(signal) {
        report('connecting');
        h = await InfluxHttp.open(c.url, { token: c.token });
        const rows = h.db.getQueryApi({ org: c.org, type: 'flux' }).iterateRows(c.query)[Symbol.asyncIterator]();
        const next = async () => {
          try {
            return await rows.next();
          } catch (e) {
            const msg = describe(c, e);
            report('disconnected', msg);
            throw new SourceError(`influxdb: ${msg}`, { cause: e });
          }
        };
        // The first row (or the end) before the unit: a refused query fails the run, not a unit.
        const first = await next();
        report('connected');
        if (first.done || signal.aborted) return;
        yield {
          meta: { source_path: `${target(c.url)}/api/v2/query` },
          messages: true,
          async *read() {
            yield record(first.value);
            for (let r = await next(); !r.done; r = await next()) yield record(r.value);
          },
        };
      },
      async close() {
        h?.close();
      },
    };
  },
});
