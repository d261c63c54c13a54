// Sink `ves`: each record becomes one VES 7.1.1 event (header.ts builds the commonEventHeader and
// the domain's fields block), sent to a VES Event Listener: a batch of one as
// `POST {url}/eventListener/v7` with `{"event": ...}`, a larger batch as one
// `POST {url}/eventListener/v7/eventBatch` with `{"eventList": [...]}` (one sink has one domain,
// so every batch satisfies VES 7.1's one-domain-per-batch rule). A record that cannot become an
// event of the domain is dead-lettered on its own; a body the collector refuses (400) is
// dead-lettered whole with the collector's reason; 5xx, 408, 429 and network failures are retried
// by the runtime (retry_count); 401/403/404 fail the write (a config problem). The HTTP client is
// the rest connector's (undici, its own pool, TLS policy and timeout).
import { Type, type Static } from '@sinclair/typebox';
import { WriteError } from '../../../core/errors.js';
import { httpAuthFields, httpAuthHeader, lintHttpAuth } from '../../connector-runtime/http-auth.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import { defineSink, type LintIssue, type Rec, type WriteResult } from '../../types.js';
import { describeTarget, excerpt, HttpClient, networkError, statusText, type HttpResponse } from '../../connector-runtime/http-client.js';
import { eventBuilder, EventError, SUPPORTED_DOMAINS, UNSUPPORTED_DOMAINS } from './header.js';

const config = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      pattern: '^https?://',
      description:
        'Base URL of the VES collector (http:// or https://, with any path prefix the collector is served under, without /eventListener): events go to {url}/eventListener/v7 and {url}/eventListener/v7/eventBatch. Put credentials in the auth fields, not in the URL.',
    }),
    domain: Type.Union(
      SUPPORTED_DOMAINS.map((d) => Type.Literal(d)),
      {
        description: `VES domain of every event (commonEventHeader.domain) and so its fields block: ${SUPPORTED_DOMAINS.join(', ')}. The schema's other domains (${UNSUPPORTED_DOMAINS.join(', ')}) are not built by this sink.`,
      },
    ),
    source_name: Type.String({
      minLength: 1,
      description: 'Name of the reporting entity: commonEventHeader.reportingEntityName, and sourceName unless a record has a sourceName field.',
    }),
    ...httpAuthFields,
    version: Type.Union([Type.Literal('7.1')], {
      default: '7.1',
      description: 'VES Event Listener version: 7.1 (path /eventListener/v7, vesEventListenerVersion 7.1.1, header version 4.1, Common Event Format 30.1.1).',
    }),
    timestamp_field: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Record field with the event time (ISO 8601, or epoch seconds/ms/us/ns by magnitude) for startEpochMicrosec and lastEpochMicrosec; a record without a readable time is dead-lettered. Unset: the time of the write. A record field startEpochMicrosec wins. Our extension of doc 3.',
      }),
    ),
    timeout: Type.Number({
      exclusiveMinimum: 0,
      default: 30,
      description: 'Seconds one request may take, from connecting to the last byte of the answer. Our extension of doc 3.',
    }),
    verify_ssl: Type.Boolean({
      default: true,
      description:
        'Check the certificate of an https:// collector; false accepts any certificate (self-signed test collectors), which also accepts an attacker in the middle. Our extension of doc 3.',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out: LintIssue[] = [];
  if (/^https?:\/\/[^/?#]*@/i.test(c.url))
    out.push({ path: 'url', message: 'credentials in the URL are not sent; use auth_type: basic with username and password' });
  if (/\/eventListener(\/|$)/i.test(c.url))
    out.push({ path: 'url', message: 'url is the collector base: the sink adds /eventListener/v7 itself; remove /eventListener... from url' });
  if (/[?#]/.test(c.url)) out.push({ path: 'url', message: 'url cannot carry a query or fragment: the sink appends /eventListener/v7 to its path' });
  out.push(...lintHttpAuth(c));
  return out;
}

/** `{url}/eventListener/v7` (and `/eventBatch`): the collector's path prefix kept. */
export function listenerUrl(base: string, batch: boolean): URL {
  const u = new URL(base);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/eventListener/v7${batch ? '/eventBatch' : ''}`;
  return u;
}

/**
 * The collector's reason from a VES error body (`{"requestError": {"serviceException" | "policyException":
 * {messageId, text, variables}}}`, text with %1.. filled from variables), else the start of the body.
 */
export function collectorReason(body: Buffer): string {
  try {
    const doc = JSON.parse(body.toString('utf8')) as { requestError?: Record<string, { messageId?: string; text?: string; variables?: unknown }> };
    const ex = doc.requestError && Object.values(doc.requestError)[0];
    if (ex && typeof ex.text === 'string') {
      const vars = Array.isArray(ex.variables) ? ex.variables.map(String) : ex.variables === undefined ? [] : [String(ex.variables)];
      const text = ex.text.replace(/%(\d+)/g, (m, i: string) => vars[Number(i) - 1] ?? m);
      return `${ex.messageId ? `${ex.messageId}: ` : ''}${text}`.slice(0, 1000);
    }
  } catch {
    // not JSON: the raw start below
  }
  return excerpt(body);
}

const retryableStatus = (s: number) => s >= 500 || s === 408 || s === 429;
const authHint = (s: number) => (s === 401 || s === 403 ? ': the collector refused the credentials (check auth_type and username/password or token)' : '');
const notFoundHint = (s: number) => (s === 404 ? ': no VES event listener there; url must be the collector base URL (the sink adds /eventListener/v7)' : '');

export default defineSink({
  key: 'ves',
  summary: 'Send each record as a VES 7.1 event (commonEventHeader and the domain fields block) to a VES Event Listener, batches as eventBatch.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch counts as written only once the collector answered 2xx (202 Accepted); a request that failed or timed out is sent again by the runtime (retry_count) with the same eventId and sequence per event, so a collector that took the batch but whose answer was lost receives those events twice.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Alarms as fault events, basic auth, retried while the collector is unavailable',
      yaml: 'type: ves\nurl: https://ves-collector.example.net:8443\ndomain: fault\nsource_name: svc-alarm-relay\nauth_type: basic\nusername: svc\npassword: ${VES_PASSWORD:-change-me}\ntimestamp_field: raised_at\nretry_count: 5\nretry_delay_seconds: 2',
    },
    {
      title: 'KPI records as measurement events with a bearer token',
      yaml: 'type: ves\nurl: https://dcae.example.net/ves\ndomain: measurement\nsource_name: pm-collector-01\nauth_type: bearer\ntoken: ${VES_TOKEN:-change-me}',
    },
    {
      title: 'Any records as other-domain events (fields in otherFields.hashMap)',
      yaml: 'type: ves\nurl: http://127.0.0.1:8080\ndomain: other\nsource_name: svc',
    },
  ],
  // Sends no event: GET {url}/eventListener/v7 with the credentials. A collector answers it after
  // checking them (a real one: 405, the listener takes POST only); 401/403 is wrong credentials, 404
  // a url that is not a collector base, 5xx an unavailable collector.
  async test(c, { signal }) {
    const timeoutS = c.timeout ?? 30;
    const http = new HttpClient({ verifySsl: c.verify_ssl ?? true, timeoutS });
    const url = listenerUrl(c.url, false);
    const target = describeTarget('GET', url);
    try {
      let res: HttpResponse;
      try {
        res = await http.send({ method: 'GET', url, headers: { accept: 'application/json', ...httpAuthHeader(c) }, signal });
      } catch (e) {
        throw new Error(networkError(e, target, timeoutS), { cause: e });
      }
      const s = res.status;
      if (s === 401 || s === 403 || s === 404 || s >= 500) {
        throw new Error(
          `${target} returned ${statusText(s)}${authHint(s)}${notFoundHint(s)}${s >= 500 ? `: the collector is not available (${collectorReason(res.body)})` : ''}`,
        );
      }
    } finally {
      await http.close();
    }
  },
  create(c, ctx) {
    const http = new HttpClient({ verifySsl: c.verify_ssl, timeoutS: c.timeout });
    const presence = new PeerPresence(ctx, 'ves');
    const build = eventBuilder({ domain: c.domain, sourceName: c.source_name, timestampField: c.timestamp_field });
    const headers = { 'content-type': 'application/json', accept: 'application/json', ...httpAuthHeader(c) };
    const single = listenerUrl(c.url, false);
    const batchUrl = listenerUrl(c.url, true);
    let runId = Date.now().toString(36);
    let next = 0;
    // A record keeps its event (sequence, default eventId, time) when the runtime sends its batch again.
    const built = new WeakMap<Rec, Rec>();
    const eventOf = (r: Rec, nowMicros: number) => {
      let e = built.get(r);
      if (e === undefined) {
        e = build(r, { sequence: next, runId, nowMicros });
        next++;
        built.set(r, e);
      }
      return e;
    };
    return {
      async open(run) {
        runId = run.runId;
        next = 0;
      },
      async write(batch): Promise<WriteResult | void> {
        const records = batch.records ?? [];
        const rejected: { index: number; reason: string }[] = [];
        const events: Rec[] = [];
        const sent: number[] = [];
        const nowMicros = Date.now() * 1000;
        records.forEach((r, i) => {
          try {
            events.push(eventOf(r, nowMicros));
            sent.push(i);
          } catch (e) {
            if (!(e instanceof EventError)) throw e;
            rejected.push({ index: i, reason: `ves: not a valid ${c.domain} event: ${e.message}` });
          }
        });
        if (events.length === 0) return { rejected };
        const isBatch = events.length > 1;
        const url = isBatch ? batchUrl : single;
        const target = describeTarget('POST', url);
        const body = JSON.stringify(isBatch ? { eventList: events } : { event: events[0] });
        presence.connecting();
        let res: HttpResponse;
        try {
          res = await http.send({ method: 'POST', url, headers, body, signal: ctx.signal });
        } catch (e) {
          const message = networkError(e, target, c.timeout);
          presence.lost(message);
          // With records refused for good in this batch, only the others are written again.
          if (rejected.length) return { rejected, retry: sent.map((index) => ({ index, reason: `ves: ${message}` })) };
          throw new WriteError(`ves: ${message}`, true, { cause: e });
        }
        presence.answered();
        const s = res.status;
        if (s >= 200 && s < 300) return { rejected, bytes: Buffer.byteLength(body) };
        if (s === 400) {
          // The collector judges the body as a whole: every event of it is refused with its reason.
          const reason = `ves: the collector refused the ${isBatch ? `batch of ${events.length} events` : 'event'} (${target} returned ${statusText(s)}): ${collectorReason(res.body)}`;
          for (const i of sent) rejected.push({ index: i, reason });
          return { rejected };
        }
        const why = collectorReason(res.body);
        if (retryableStatus(s) && rejected.length)
          return { rejected, retry: sent.map((index) => ({ index, reason: `ves: ${target} returned ${statusText(s)}${why ? ` (${why})` : ''}` })) };
        throw new WriteError(`ves: ${target} returned ${statusText(s)}${authHint(s)}${notFoundHint(s)}${why ? ` (${why})` : ''}`, retryableStatus(s));
      },
      close: () => http.close(),
    };
  },
});
