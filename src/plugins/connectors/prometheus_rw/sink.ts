// Sink `prometheus_rw`: records as Prometheus remote write 1.0 (a snappy-compressed protobuf
// WriteRequest POSTed to the receiver's URL: Prometheus' /api/v1/write, Mimir, Thanos, Cortex,
// VictoriaMetrics...). series.ts turns each record into samples; a batch goes out as one request
// or, beyond max_samples_per_send, several in order. As the remote-write specification says, a 5xx
// or 429 is retried (by the runtime, honouring Retry-After) and any other 4xx is not: the records
// of that request are dead-lettered with the receiver's message. The HTTP client is the one the
// rest and ves connectors share (undici, its own pool, TLS policy and timeout).
import { Type, type Static } from '@sinclair/typebox';
import { WriteError } from '../../../core/errors.js';
import { describeTarget, excerpt, HttpClient, networkError, retryAfterMs, statusText, type HttpResponse } from '../../connector-runtime/http-client.js';
import { httpAuthFields, httpAuthHeader, lintHttpAuth } from '../../connector-runtime/http-auth.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import { defineSink, type LintIssue, type WriteResult } from '../../types.js';
import { encodeWriteRequest, labelBytes, REMOTE_WRITE_HEADERS, snappyBlock, type SeriesIn } from './encode.js';
import { labelName, SeriesMapper, type OutSample } from './series.js';
import { version } from '../../../version.js';

const names = (description: string, dflt: string[]) => Type.Array(Type.String({ minLength: 1 }), { default: dflt, description });

const config = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      pattern: '^https?://',
      description:
        "The receiver's remote-write URL, as in Prometheus' remote_write `url`: `http://prometheus:9090/api/v1/write` (Prometheus with --web.enable-remote-write-receiver), Mimir's `/api/v1/push`. Credentials go in the auth fields, not the URL.",
    }),
    name_field: Type.String({ minLength: 1, default: 'name', description: 'Record field holding the metric name (`__name__`).' }),
    metric_name: Type.Optional(
      Type.String({ minLength: 1, description: 'A fixed metric name for every record instead of name_field (which then becomes a label like any field).' }),
    ),
    value_fields: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      default: ['value'],
      description:
        'Record fields holding sample values, one series each. With one field the series is named by the metric name; with several, `<name>_<field>` (or `<field>` for a record without a name). A missing or null field gives no sample; text that is not a number dead-letters the record.',
    }),
    label_fields: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        description:
          "Only these fields become labels. Unset: every other scalar field (not the name, value or timestamp fields, nor fields starting with `_`), and the entries of object fields (the prometheus_rw source's `labels`).",
      }),
    ),
    exclude_labels: names(
      'Fields that never become labels (by default the fields of the prometheus_rw and prometheus_scrape records that are not labels: `timestamp_ms`, `stale`, `type`, `help`, `unit`).',
      ['timestamp_ms', 'stale', 'type', 'help', 'unit'],
    ),
    static_labels: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description: "Labels added to every series (as Prometheus' external_labels: a record's own label of the same name wins).",
      }),
    ),
    timestamp_field: Type.String({
      minLength: 1,
      default: 'timestamp',
      description:
        'Record field with the sample time (epoch s/ms/us/ns by magnitude, or ISO 8601); a record without it is stamped with the time of the write, one that is not a time is dead-lettered.',
    }),
    counter_fields: names(
      "Value fields that are counters (besides those the record's `_snmp_widths` names, from snmp_poll): named with `_total`, and Counter32 wraps unwrapped (snmp_wraps).",
      [],
    ),
    type_field: Type.String({
      minLength: 1,
      default: 'type',
      description:
        "Record field naming the type of its values: Counter32 or Counter64 (a MIB type) makes them counters of that width, `counter` (Prometheus' type, as prometheus_scrape records have it) counters that never wrap; any other value (Gauge32, TimeTicks, gauge) leaves them gauges.",
    }),
    counter_total_suffix: Type.Boolean({
      default: true,
      description: "Append `_total` to a counter's name unless it has it (OpenMetrics' counter rule; the Collector's add_metric_suffixes).",
    }),
    snmp_wraps: Type.Union([Type.Literal('unwrap'), Type.Literal('raw')], {
      default: 'unwrap',
      description:
        '`unwrap`: a 32-bit counter that goes down by less than half its range wrapped, and 2^32 is added from then on, so the series stays monotonic and rate() is right; any other decrease is a reset, sent as read. `raw`: values as read (Prometheus then takes every wrap for a reset).',
    }),
    max_series: Type.Integer({
      minimum: 1,
      default: 1000000,
      description: 'Counter series whose last value is remembered for snmp_wraps; the oldest are forgotten first.',
    }),
    max_samples_per_send: Type.Integer({
      minimum: 1,
      default: 2000,
      description: "Samples per request at most (Prometheus' queue_config max_samples_per_send); a larger batch goes out as several requests, in order.",
    }),
    headers: Type.Optional(
      Type.Record(Type.String(), Type.String({ writeOnly: true }), {
        description: 'Extra HTTP headers on every request (a tenant: X-Scope-OrgID, a vendor key); their values are masked like secrets.',
      }),
    ),
    ...httpAuthFields,
    timeout: Type.Number({
      exclusiveMinimum: 0,
      default: 30,
      description: "Seconds one request may take, from connecting to the last byte of the answer (Prometheus' remote_timeout).",
    }),
    verify_ssl: Type.Boolean({
      default: true,
      description:
        'Check the certificate of an https:// receiver; false accepts any certificate (self-signed test receivers), which also accepts an attacker in the middle.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out: LintIssue[] = [];
  if (/^https?:\/\/[^/?#]*@/i.test(c.url))
    out.push({ path: 'url', message: 'credentials in the URL are not sent; use auth_type: basic with username and password' });
  out.push(...lintHttpAuth(c));
  (c.value_fields ?? []).forEach((f, i) => {
    if (f === c.timestamp_field) out.push({ path: `value_fields[${i}]`, message: `'${f}' is also timestamp_field: a field is either a value or the time` });
  });
  (c.counter_fields ?? []).forEach((f, i) => {
    if (!(c.value_fields ?? ['value']).includes(f))
      out.push({ path: `counter_fields[${i}]`, message: `'${f}' is not one of value_fields (${(c.value_fields ?? ['value']).join(', ')})` });
  });
  for (const k of Object.keys(c.static_labels ?? {}))
    if (labelName(k) !== k)
      out.push({ path: `static_labels.${k}`, message: `'${k}' is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)` });
  return out;
}

const retryable = (s: number) => s >= 500 || s === 429;
const hint = (s: number) =>
  s === 401 || s === 403
    ? ' (the receiver refused the credentials: check auth_type and username/password or token)'
    : s === 404
      ? ' (nothing takes remote write there: Prometheus needs --web.enable-remote-write-receiver, and url ends in /api/v1/write)'
      : '';

/**
 * The encoded labels of the series sent lately, by series key: a series goes out request after
 * request with the same labels, so they are encoded once. Bounded: emptied when full.
 */
export class LabelCache {
  private readonly map = new Map<string, Buffer>();
  constructor(private readonly max = 100_000) {}
  get(key: string, labels: [string, string][]): Buffer {
    let b = this.map.get(key);
    if (b === undefined) {
      if (this.map.size >= this.max) this.map.clear();
      b = Buffer.from(labelBytes(labels));
      this.map.set(key, b);
    }
    return b;
  }
}

/** The samples of some records as series: one TimeSeries per label set, its samples in time order. */
export function seriesOf(samples: OutSample[], cache?: LabelCache): SeriesIn[] {
  const by = new Map<string, SeriesIn>();
  for (const s of samples) {
    const x = by.get(s.key);
    // An OutSample is a sample as the encoder reads it (value, timestamp_ms): no copy.
    if (x) x.samples.push(s);
    else by.set(s.key, { labels: s.labels, samples: [s], encoded: cache?.get(s.key, s.labels) });
  }
  const out = [...by.values()];
  for (const x of out) if (x.samples.length > 1) x.samples.sort((a, b) => a.timestamp_ms - b.timestamp_ms);
  return out;
}

export default defineSink({
  key: 'prometheus_rw',
  summary: 'Send records as Prometheus remote write 1.0 (snappy protobuf): series labels from record fields, counters named and unwrapped as SNMP says.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch counts as written once the receiver answered 2xx; a 5xx, 429 or lost connection sends it again (the runtime, honouring Retry-After). A sample sent twice has the same series and timestamp, which Prometheus stores once.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Interface counters from snmp_poll into Prometheus (counters named _total, 32-bit wraps unwrapped)',
      yaml: 'type: prometheus_rw\nurl: http://prometheus.internal:9090/api/v1/write\nname_field: metric\nvalue_fields: [ifHCInOctets, ifHCOutOctets]\nlabel_fields: [agent_address, ifIndex, ifName]\ntimestamp_field: poll_time\nstatic_labels:\n  job: svc-snmp',
    },
    {
      title: 'PM counters to Grafana Mimir with a tenant header and basic auth',
      yaml: 'type: prometheus_rw\nurl: https://mimir.example.net/api/v1/push\nmetric_name: pm_counter\nvalue_fields: [value]\nheaders:\n  X-Scope-OrgID: noc\nauth_type: basic\nusername: svc\npassword: ${MIMIR_PASSWORD:-change-me}\nretry_count: 5',
    },
  ],
  // An empty WriteRequest: the receiver checks the credentials and the path, and stores nothing.
  async test(c, { signal }) {
    const http = new HttpClient({ verifySsl: c.verify_ssl ?? true, timeoutS: c.timeout ?? 30 });
    const url = new URL(c.url);
    const target = describeTarget('POST', url);
    try {
      let res: HttpResponse;
      try {
        res = await http.send({
          method: 'POST',
          url,
          headers: { ...REMOTE_WRITE_HEADERS, ...(c.headers ?? {}), ...httpAuthHeader(c) },
          body: snappyBlock(new Uint8Array(0)),
          signal,
        });
      } catch (e) {
        throw new Error(networkError(e, target, c.timeout ?? 30), { cause: e });
      }
      if (res.status < 200 || res.status >= 300) throw new Error(`${target} returned ${statusText(res.status)}${hint(res.status)}: ${excerpt(res.body)}`);
    } finally {
      await http.close();
    }
  },
  create(c, ctx) {
    const http = new HttpClient({ verifySsl: c.verify_ssl, timeoutS: c.timeout });
    const presence = new PeerPresence(ctx, 'prometheus_rw');
    const url = new URL(c.url);
    const target = describeTarget('POST', url);
    const headers = { ...(c.headers ?? {}), ...REMOTE_WRITE_HEADERS, 'user-agent': `svc/${version}`, ...httpAuthHeader(c) };
    const mapper = new SeriesMapper({
      nameField: c.name_field,
      metricName: c.metric_name,
      valueFields: c.value_fields,
      labelFields: c.label_fields,
      excludeLabels: c.exclude_labels,
      staticLabels: c.static_labels ?? {},
      timestampField: c.timestamp_field,
      counterFields: c.counter_fields,
      typeField: c.type_field,
      totalSuffix: c.counter_total_suffix,
      snmpWraps: c.snmp_wraps,
      maxSeries: c.max_series,
    });
    const max = c.max_samples_per_send;
    const labelCache = new LabelCache(Math.min(c.max_series, 100_000));

    return {
      async write(batch): Promise<WriteResult | void> {
        const records = batch.records ?? [];
        const rejected: { index: number; reason: string }[] = [];
        // Requests of at most `max` samples, whole records each (a record with more samples than that goes alone).
        const requests: { samples: OutSample[]; index: number[] }[] = [];
        let cur: { samples: OutSample[]; index: number[] } = { samples: [], index: [] };
        const now = Date.now();
        records.forEach((r, i) => {
          const m = mapper.map(r, now);
          if ('refused' in m) {
            rejected.push({ index: i, reason: `prometheus_rw: ${m.refused}` });
            return;
          }
          if (cur.samples.length > 0 && cur.samples.length + m.samples.length > max) {
            requests.push(cur);
            cur = { samples: [], index: [] };
          }
          for (const s of m.samples) cur.samples.push(s);
          cur.index.push(i);
        });
        if (cur.index.length) requests.push(cur);
        let bytes = 0;
        for (let k = 0; k < requests.length; k++) {
          const req = requests[k]!;
          const body = snappyBlock(encodeWriteRequest(seriesOf(req.samples, labelCache)));
          const later = () => requests.slice(k).flatMap((q) => q.index);
          presence.connecting();
          let res: HttpResponse;
          try {
            res = await http.send({ method: 'POST', url, headers, body, signal: ctx.signal });
          } catch (e) {
            const message = `prometheus_rw: ${networkError(e, target, c.timeout)}`;
            presence.lost(message);
            if (k === 0 && rejected.length === 0) throw new WriteError(message, true, { cause: e });
            return { rejected, retry: later().map((index) => ({ index, reason: message })), bytes };
          }
          presence.answered();
          const s = res.status;
          if (s >= 200 && s < 300) {
            bytes += body.length;
            continue;
          }
          const message = `prometheus_rw: ${target} returned ${statusText(s)}${hint(s)}: ${excerpt(res.body, 500)}`;
          if (retryable(s)) {
            const wait = retryAfterMs(res.headers);
            if (k === 0 && rejected.length === 0) throw new WriteError(message, true, { retryAfterMs: wait });
            return { rejected, retry: later().map((index) => ({ index, reason: message })), retryAfterMs: wait, bytes };
          }
          // Any other 4xx: sending the same samples again cannot help (the specification: do not retry).
          for (const index of req.index) rejected.push({ index, reason: message });
        }
        return { rejected, bytes };
      },
      close: () => http.close(),
    };
  },
});
