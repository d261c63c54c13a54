// Source `prometheus_rw` (stream): Prometheus remote write 1.0 at POST /webhooks/<path>. Each
// request is a snappy-compressed protobuf WriteRequest; every sample becomes one record
// {name, labels, value, timestamp, timestamp_ms}.
//
// Built on the webhook source's machinery (src/plugins/connector-runtime/webhook-stream.ts): a bounded queue,
// and under the daemon a spool on disk that holds each body as it arrived before the answer, and
// is committed only after delivery. The body is checked when it arrives (a bad snappy block or
// protobuf is a 400, which Prometheus drops: resending cannot help), answered 204 once spooled
// (Prometheus takes any 2xx), 503 while the queue is full (Prometheus retries 5xx with backoff and
// keeps the samples meanwhile), and decoded into records when its unit is read.
import { Type } from '@sinclair/typebox';
import { readSetting } from '../../../settings.js';
import { webhookStream } from '../../connector-runtime/webhook-stream.js';
import { defineSource } from '../../types.js';
import { checkWriteRequest, decodeWriteRequest, RemoteWriteError, uncompress, type SampleRecord } from './decode.js';

const config = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      pattern: '^/?[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*/?$',
      default: 'prom-rw',
      description: 'Served at POST /webhooks/<path>: the remote_write url is http://<svc host>:<port>/webhooks/<path>.',
    }),
    secret: Type.Optional(
      Type.String({
        minLength: 1,
        writeOnly: true,
        description: 'Bearer token Prometheus must present (remote_write authorization: credentials: <secret>); 401 otherwise.',
      }),
    ),
    max_queue_size: Type.Integer({
      minimum: 1,
      default: 1000,
      description: 'Remote-write requests held before the pipeline takes them; beyond it the endpoint answers 503 and Prometheus retries.',
    }),
  },
  { additionalProperties: false },
);

export default defineSource({
  key: 'prometheus_rw',
  summary: 'Receive Prometheus remote write (snappy protobuf) at /webhooks/<path>: one record per sample.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a request is answered 2xx only once its body is on disk in the spool, and committed there only after its records were delivered; a full queue answers 503, which Prometheus retries, and a crash replays what was not committed.',
  },
  config,
  resources: (c) => [{ kind: 'ingress', path: c.path }],
  // Nothing to reach: the daemon serves the path itself once the stream runs.
  async test() {},
  examples: [
    { title: 'Remote write from Prometheus with a bearer token', yaml: 'type: prometheus_rw\npath: prom-rw\nsecret: ${PROM_RW_TOKEN:-change-me}' },
    { title: 'A second Prometheus on its own path, larger queue', yaml: 'type: prometheus_rw\npath: prom-rw/dc2\nmax_queue_size: 5000' },
  ],
  create(c, ctx) {
    const maxOutput = readSetting('PROMETHEUS_RW_MAX_OUTPUT_BYTES');
    const noted = new Set<string>();
    const notes: string[] = [];
    const note = (kind: string, n: number) => {
      if (n === 0 || noted.has(kind)) return;
      noted.add(kind);
      const text = `prometheus_rw: ${kind} are not samples and are not turned into records (first seen in a request of ${c.path}; further ones are not noted)`;
      notes.push(text);
      ctx.log.info({ webhook_path: c.path }, text);
    };
    const source = webhookStream(c, ctx, {
      type: 'prometheus_rw',
      acceptedStatus: 204,
      reportConnection: true,
      validate(m) {
        try {
          checkWriteRequest(uncompress(m.body), maxOutput);
          return undefined;
        } catch (e) {
          if (e instanceof RemoteWriteError) return e.message;
          throw e;
        }
      },
      *read(m) {
        const records: SampleRecord[] = [];
        let ignored;
        try {
          ignored = decodeWriteRequest(uncompress(m.body), (r) => records.push(r), maxOutput);
        } catch (e) {
          // Checked on arrival, so only a spool written by another version (or under a larger
          // SVC_PROMETHEUS_RW_MAX_OUTPUT_BYTES) gets here: the raw body then fails JSON decoding
          // and is dead-lettered with its bytes, nothing is lost silently.
          if (!(e instanceof RemoteWriteError)) throw e;
          ctx.log.warn({ webhook_path: c.path, error: e.message }, 'prometheus_rw: a spooled body does not decode; it goes to the dead-letter queue');
          yield m.body;
          return;
        }
        note('exemplars', ignored.exemplars);
        note('native histograms', ignored.histograms);
        note('metric metadata entries', ignored.metadata);
        // One message per request: a JSON array of its samples, each element one record.
        if (records.length) yield Buffer.from(JSON.stringify(records));
      },
    });
    source.notes = notes;
    return source;
  },
});
