// Source `prometheus_scrape` (batch, run on a schedule): each run GETs the `/metrics` of every
// target, at most `max_concurrency` at a time, each within `timeout_seconds` (request, body and
// parsing), and parses the text format or OpenMetrics (parse.ts) into one record per sample, with
// the target's `job` and `instance` labels as Prometheus' own scrape adds them. One unit per
// target. A target that fails (no answer, a non-2xx, a body past max_body_bytes, past the
// deadline) is a note in the run and a count of svc_prometheus_scrape_errors_total, never a failed
// run (snmp_poll's fleet rules); a body that does not parse is dead-lettered whole with the line
// that is wrong. Decisions: docs/connectors/prometheus_scrape.md.
import { Type, type Static } from '@sinclair/typebox';
import { version } from '../../../version.js';
import { BodyTooLargeError, describeTarget, excerpt, HttpClient, networkError, statusText } from '../../connector-runtime/http-client.js';
import { httpAuthFields, httpAuthHeader, lintHttpAuth } from '../../connector-runtime/http-auth.js';
import { fleetUnits, owned, TargetDeadlineError } from '../../connector-runtime/target-fleet.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { sampleValue } from '../../common/prom-value.js';
import { defineSource, type LintIssue, type PluginContext, type Rec, type SourceUnit } from '../../types.js';
import { ExpositionError, formatOf, parseExposition, type Limits } from './parse.js';
import { promScrapeMetrics } from './metrics.js';

/** What Prometheus 2.42 asks a target for: OpenMetrics first, then the text format. */
export const ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

const config = Type.Object(
  {
    targets: Type.Array(Type.String({ minLength: 1, pattern: '^https?://' }), {
      minItems: 1,
      description: 'URLs to scrape (`http://host:9100/metrics`), each a target with its own deadline; one failing does not fail the others.',
    }),
    job: Type.Optional(Type.String({ minLength: 1, description: "The `job` label of every sample, as Prometheus' job_name (default: the pipeline's name)." })),
    labels: Type.Optional(
      Type.Record(Type.String({ pattern: '^[a-zA-Z_][a-zA-Z0-9_]*$' }), Type.String(), {
        description: 'Labels added to every sample of every target (static_configs labels).',
      }),
    ),
    honor_labels: Type.Boolean({
      default: false,
      description:
        "As Prometheus' honor_labels: false renames a scraped label that clashes with a target label (job, instance, labels) to `exported_<name>`; true keeps the scraped one.",
    }),
    honor_timestamps: Type.Boolean({
      default: true,
      description: "Keep the timestamps a target exposes (Prometheus' honor_timestamps); false stamps every sample with the scrape time.",
    }),
    timeout_seconds: Type.Number({
      exclusiveMinimum: 0,
      default: 10,
      description:
        "Deadline for one target: connecting, the body and its parsing (Prometheus' scrape_timeout; snmp_poll's target_timeout_seconds). Past it the target is noted as failed.",
    }),
    max_concurrency: Type.Integer({ minimum: 1, maximum: 10000, default: 100, description: 'Targets scraped at the same time.' }),
    max_body_bytes: Type.Integer({
      minimum: 1,
      default: 16777216,
      description: "Largest body taken (Prometheus' body_size_limit); a larger one is cut off as it streams and the target noted as failed.",
    }),
    max_samples: Type.Integer({
      minimum: 1,
      default: 200000,
      description: "Samples per target at most (Prometheus' sample_limit); past it the body is dead-lettered.",
    }),
    max_labels: Type.Integer({ minimum: 1, default: 64, description: 'Labels per sample at most (label_limit).' }),
    max_label_name_bytes: Type.Integer({ minimum: 1, default: 256, description: 'Longest label name (label_name_length_limit).' }),
    max_label_value_bytes: Type.Integer({ minimum: 1, default: 4096, description: 'Longest label value (label_value_length_limit).' }),
    ...httpAuthFields,
    verify_ssl: Type.Boolean({ default: true, description: 'Check the certificate of https:// targets; false accepts any certificate.' }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out: LintIssue[] = [];
  c.targets.forEach((t, i) => {
    try {
      const u = new URL(t);
      if (u.username || u.password)
        out.push({ path: `targets[${i}]`, message: 'credentials in the URL are not sent; use auth_type: basic with username and password' });
    } catch {
      out.push({ path: `targets[${i}]`, message: `"${t}" is not a URL` });
    }
  });
  out.push(...lintHttpAuth(c));
  return out;
}

class StatusError extends Error {}

/** Why a target failed, as the reason label of svc_prometheus_scrape_errors_total. */
function reasonOf(e: unknown): string {
  if (e instanceof TargetDeadlineError) return 'timeout';
  if (e instanceof StatusError) return 'status';
  if (e instanceof BodyTooLargeError) return 'too_large';
  const err = e as { code?: string; name?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code;
  if (err.name === 'TimeoutError' || (code && /TIMEOUT/.test(code))) return 'timeout';
  if (code && /^E(HOSTUNREACH|NETUNREACH|ADDRNOTAVAIL|NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET)/.test(code)) return 'unreachable';
  return 'error';
}

/** `host:port` of a target URL: Prometheus' `instance` label. */
export function instanceOf(url: string): string {
  const u = new URL(url);
  return u.port ? u.host : `${u.hostname}:${u.protocol === 'https:' ? 443 : 80}`;
}

export interface ScrapeResult {
  /** The records, or the body that did not parse and why. */
  records?: Rec[];
  poison?: { body: Buffer; reason: string };
  bytes: number;
}

/** The records of one scraped body, with the target's labels as Prometheus' scrape adds them. */
export function recordsOf(
  body: Buffer,
  contentType: string | undefined,
  o: { url: string; job: string; labels: Record<string, string>; honorLabels: boolean; honorTimestamps: boolean; limits: Limits; now: number },
): Rec[] {
  const target: Record<string, string> = { ...o.labels, job: o.job, instance: instanceOf(o.url) };
  const nowIso = new Date(o.now).toISOString();
  const records: Rec[] = [];
  parseExposition(body.toString('utf8'), formatOf(contentType), o.limits, (s) => {
    const labels: Record<string, string> = {};
    const set = (k: string, v: string) => Object.defineProperty(labels, k, { value: v, enumerable: true, writable: true, configurable: true });
    for (const [k, v] of Object.entries(s.labels)) {
      if (Object.hasOwn(target, k) && !o.honorLabels) set(`exported_${k}`, v);
      else set(k, v);
    }
    for (const [k, v] of Object.entries(target)) if (!Object.hasOwn(labels, k) || !o.honorLabels) set(k, v);
    const ms = o.honorTimestamps && s.timestamp_ms !== undefined ? s.timestamp_ms : o.now;
    const rec: Rec = {
      name: s.name,
      labels,
      value: sampleValue(s.value),
      timestamp: ms === o.now ? nowIso : new Date(ms).toISOString(),
      timestamp_ms: ms,
      type: s.type,
    };
    if (s.help !== undefined) rec.help = s.help;
    if (s.unit !== undefined) rec.unit = s.unit;
    rec._target = o.url;
    records.push(rec);
  });
  return records;
}

export default defineSource({
  key: 'prometheus_scrape',
  summary:
    'Scrape Prometheus /metrics endpoints (text format and OpenMetrics) on a schedule: one record per sample, a fleet of targets each with its own deadline.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'scraping consumes nothing at the target: a run that fails leaves nothing acknowledged and the next run scrapes again (a sample is the value at that time: a missed run is a gap, never a partial target).',
  },
  config,
  metrics: promScrapeMetrics,
  lint,
  examples: [
    {
      title: 'A node exporter and Prometheus itself, every minute',
      yaml: 'type: prometheus_scrape\ntargets: [http://10.0.0.5:9100/metrics, http://prometheus.internal:9090/metrics]\njob: infra\ntimeout_seconds: 10',
    },
    {
      title: 'A fleet of exporters behind basic auth, 200 at a time',
      yaml: 'type: prometheus_scrape\ntargets:\n  - https://bbu-01.example.net:9100/metrics\n  - https://bbu-02.example.net:9100/metrics\nauth_type: basic\nusername: scraper\npassword: ${SCRAPE_PASSWORD:-change-me}\nmax_concurrency: 200\nlabels:\n  region: north',
    },
  ],
  // One GET of the first target: a 2xx proves the address and the credentials (the body is not kept).
  async test(c, { signal }) {
    const http = new HttpClient({ verifySsl: c.verify_ssl ?? true, timeoutS: c.timeout_seconds ?? 10 });
    const url = new URL(c.targets[0]!);
    const target = describeTarget('GET', url);
    try {
      let res;
      try {
        res = await http.send(
          { method: 'GET', url, headers: { accept: ACCEPT, ...httpAuthHeader(c) }, signal },
          { maxBodyBytes: c.max_body_bytes ?? 16777216 },
        );
      } catch (e) {
        if (e instanceof BodyTooLargeError) throw new Error(`${target}: ${e.message} (max_body_bytes)`, { cause: e });
        throw new Error(networkError(e, target, c.timeout_seconds ?? 10), { cause: e });
      }
      if (res.status < 200 || res.status >= 300)
        throw new Error(
          `${target} returned ${statusText(res.status)}${res.status === 401 || res.status === 403 ? ' (check auth_type and the credentials)' : ''}: ${excerpt(res.body)}`,
        );
    } finally {
      await http.close();
    }
  },
  // A fleet splits by endpoint (issue 33): the identity is the URL as configured.
  shard: {
    async targets(c) {
      return [...c.targets];
    },
  },
  create(c, ctx) {
    const notes: string[] = [];
    return { notes, units: (signal) => scrapeUnits(c, ctx, signal, notes) };
  },
});

/** Scrapes every target (at most max_concurrency at once) and yields one unit per target that answered. */
async function* scrapeUnits(c: Config, ctx: PluginContext, signal: AbortSignal, notes: string[]): AsyncGenerator<SourceUnit> {
  const report = connectionReporter(ctx, 'prometheus_scrape');
  const timeoutS = c.timeout_seconds ?? 10;
  const http = new HttpClient({ verifySsl: c.verify_ssl ?? true, timeoutS });
  const headers = { accept: ACCEPT, 'user-agent': `svc/${version}`, 'x-prometheus-scrape-timeout-seconds': String(timeoutS), ...httpAuthHeader(c) };
  const limits: Limits = {
    maxSamples: c.max_samples ?? 200000,
    maxLabels: c.max_labels ?? 64,
    maxLabelNameBytes: c.max_label_name_bytes ?? 256,
    maxLabelValueBytes: c.max_label_value_bytes ?? 4096,
    maxLineBytes: Math.max(65536, (c.max_label_value_bytes ?? 4096) * 4),
    maxFamilies: c.max_samples ?? 200000,
  };
  const limit = c.max_concurrency ?? 100;
  const targets = owned(c.targets, (u) => u, ctx.shard);
  const scrapeSeconds = ctx.telemetry?.metric?.('svc_prometheus_scrape_seconds');
  const scrapeErrors = ctx.telemetry?.metric?.('svc_prometheus_scrape_errors_total');
  report('connecting');
  let answered = 0;
  let failed = 0;

  const scrape = async (url: string, aborted: AbortSignal): Promise<Rec[] | { body: Buffer; reason: string }> => {
    const u = new URL(url);
    const now = Date.now();
    const res = await http.send({ method: 'GET', url: u, headers, signal: aborted }, { maxBodyBytes: c.max_body_bytes ?? 16777216 });
    if (res.status < 200 || res.status >= 300) throw new StatusError(`${describeTarget('GET', u)} returned ${statusText(res.status)}: ${excerpt(res.body)}`);
    const ct = res.headers['content-type'];
    try {
      return recordsOf(res.body, Array.isArray(ct) ? ct[0] : ct, {
        url,
        job: c.job ?? ctx.pipeline,
        labels: c.labels ?? {},
        honorLabels: c.honor_labels ?? false,
        honorTimestamps: c.honor_timestamps ?? true,
        limits,
        now,
      });
    } catch (e) {
      if (e instanceof ExpositionError) return { body: res.body, reason: e.message };
      throw e;
    }
  };
  const idOf = (url: string) => describeTarget('GET', new URL(url)).slice(4);
  try {
    yield* fleetUnits({
      targets,
      limit,
      deadlineMs: timeoutS * 1000,
      signal,
      deadlineMessage: (url) => `${idOf(url)}: no complete answer within timeout_seconds (${timeoutS}s); skipped`,
      poll: scrape,
      accept(url, got, seconds) {
        answered++;
        report('connected');
        const id = idOf(url);
        const meta = { source_path: url, scrape_target: url };
        if (!Array.isArray(got)) {
          // A poison body: dead-lettered whole, with the line that is wrong.
          failed++;
          scrapeSeconds?.observe({ target: url }, seconds);
          scrapeErrors?.inc({ target: url, reason: 'parse' });
          const msg = `prometheus_scrape: ${id}: the body does not parse (${got.reason}); it goes to the dead-letter queue`;
          notes.push(msg);
          ctx.log.warn({ target: id, reason: 'parse' }, msg);
          return { meta, size: got.body.length, undecodable: [{ raw: got.body, why: `prometheus_scrape: ${id}: ${got.reason}` }], async *read() {} };
        }
        scrapeSeconds?.observe({ target: url }, seconds);
        const body = Buffer.from(JSON.stringify(got));
        return {
          meta,
          size: body.length,
          async *read() {
            yield body;
          },
        };
      },
      fail(url, e, seconds) {
        failed++;
        scrapeSeconds?.observe({ target: url }, seconds);
        scrapeErrors?.inc({ target: url, reason: reasonOf(e) });
        const id = idOf(url);
        const msg =
          e instanceof TargetDeadlineError || e instanceof StatusError
            ? e.message
            : e instanceof BodyTooLargeError
              ? `${id}: ${e.message} (max_body_bytes)`
              : networkError(e, id, timeoutS);
        notes.push(`prometheus_scrape: ${msg}`);
        ctx.log.warn({ target: id, reason: reasonOf(e) }, `prometheus_scrape: ${ctx.redact ? ctx.redact(msg) : msg}`);
      },
    });
    if (!signal.aborted && answered === 0 && failed > 0) report('disconnected', `no target answered (${failed} failed)`);
  } finally {
    // Also when the run stops early (the generator returned): the keep-alive pool is closed.
    await http.close();
  }
}
