// Sink `rest`: one HTTP request per batch, its body the batch serialized by serializer_out (a whole
// document: head, records, tail: a JSON array with the json serializer). A status outside
// expected_status fails the write; 5xx, 408, 429 and network failures are retryable (the runtime's
// retry_count, retry_delay_seconds and circuit breaker act on them), other statuses are not.
import { Type, type Static } from '@sinclair/typebox';
import { WriteError } from '../../../core/errors.js';
import { PeerPresence } from '../../connector-runtime/presence.js';
import { defineSink, type LintIssue } from '../../types.js';
import { describeTarget, excerpt, HttpClient, networkError, statusText } from '../../connector-runtime/http-client.js';
import { authHeaders, commonFields, lintCommon, lowerHeaders } from './client.js';

const config = Type.Object(
  {
    url: commonFields.url,
    method: Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH')], { default: 'POST', description: 'HTTP method of each request.' }),
    headers: commonFields.headers,
    content_type: Type.String({
      minLength: 1,
      default: 'application/json',
      description: 'Content-Type of the body; match it to serializer_out (application/x-ndjson, text/csv...).',
    }),
    auth_type: commonFields.auth_type,
    username: commonFields.username,
    password: commonFields.password,
    token: commonFields.token,
    api_key: commonFields.api_key,
    api_key_header: commonFields.api_key_header,
    timeout: commonFields.timeout,
    verify_ssl: commonFields.verify_ssl,
    expected_status: Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), {
      minItems: 1,
      default: [200, 201, 202, 204],
      description: 'Statuses that mean the batch was taken; any other fails the write (5xx, 408 and 429 are retried with retry_count, the rest are not).',
    }),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out = lintCommon(c);
  for (const name of Object.keys(c.headers)) {
    if (name.toLowerCase() === 'content-type') out.push({ path: `headers.${name}`, message: 'set the body type with content_type, not in headers' });
  }
  return out;
}

/** Statuses worth sending the same batch again for: the server may take it later. */
export const retryableStatus = (s: number) => s >= 500 || s === 408 || s === 429;

export default defineSink({
  key: 'rest',
  summary: 'Send each batch, serialized, as one HTTP(S) request (POST, PUT or PATCH) and check the status.',
  accepts: 'payload',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a write counts only once the server answered with a status in expected_status; a failed or timed-out request is retried whole by the runtime (retry_count), so a server that stored the batch but answered too late (or not at all) receives it twice.',
  },
  config,
  lint,
  examples: [
    {
      title: 'POST JSON arrays to a collector, bearer token, retried on 5xx',
      yaml: 'type: rest\nurl: https://collector.example.net/api/v1/events\nauth_type: bearer\ntoken: ${COLLECTOR_TOKEN:-change-me}\nretry_count: 3\nretry_delay_seconds: 2',
    },
    {
      title: 'NDJSON with an API key, only 202 accepted',
      yaml: 'type: rest\nurl: https://ingest.example.net/bulk\nmethod: PUT\ncontent_type: application/x-ndjson\nserializer_out:\n  type: ndjson\nauth_type: apikey\napi_key: ${INGEST_KEY:-change-me}\napi_key_header: X-Ingest-Key\nexpected_status: [202]',
    },
  ],
  // No data is sent: OPTIONS with the credentials reaches the server through TLS and auth; any
  // answer but 401/403 counts (a server that answers OPTIONS without checking credentials passes).
  async test(c, { signal }) {
    const http = new HttpClient({ verifySsl: c.verify_ssl, timeoutS: c.timeout });
    const url = new URL(c.url);
    const target = describeTarget('OPTIONS', url);
    try {
      let status: number;
      try {
        status = (await http.send({ method: 'OPTIONS', url, headers: lowerHeaders(c.headers, authHeaders(c)), signal })).status;
      } catch (e) {
        throw new Error(networkError(e, target, c.timeout), { cause: e });
      }
      if (status === 401 || status === 403)
        throw new Error(`${target} returned ${statusText(status)}: the server refused the credentials (check auth_type and the credentials)`);
    } finally {
      await http.close();
    }
  },
  create(c, ctx) {
    const http = new HttpClient({ verifySsl: c.verify_ssl, timeoutS: c.timeout });
    const presence = new PeerPresence(ctx, 'rest');
    const url = new URL(c.url);
    const target = describeTarget(c.method, url);
    const headers = lowerHeaders(c.headers, { 'content-type': c.content_type }, authHeaders(c));
    const expected = new Set(c.expected_status);
    const tail = ctx.encoder.tail;
    return {
      async write(batch) {
        const parts = [batch.head, batch.payload, tail].filter((p) => p.length > 0).map((p) => (typeof p === 'string' ? Buffer.from(p) : p));
        const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
        presence.connecting();
        let res;
        try {
          res = await http.send({ method: c.method, url, headers, body, signal: ctx.signal });
        } catch (e) {
          const message = networkError(e, target, c.timeout);
          presence.lost(message);
          throw new WriteError(`rest: ${message}`, true, { cause: e });
        }
        presence.answered();
        if (expected.has(res.status)) return;
        const text = excerpt(res.body);
        throw new WriteError(
          `rest: ${target} returned ${statusText(res.status)} (expected ${c.expected_status.join(', ')})${res.status === 401 || res.status === 403 ? ' (check auth_type and the credentials)' : ''}${text ? `: ${text}` : ''}`,
          retryableStatus(res.status),
        );
      },
      close: () => http.close(),
    };
  },
});
