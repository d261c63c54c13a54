// A VES 7.1 Event Listener (collector) as a test peer: no VES collector can be installed here, so
// this node:http (or https) server inside the test process speaks the listener's REST interface
// on a loopback port and checks what a collector checks:
// - the credentials of its auth scheme (basic or bearer) on every request: 401 with
//   WWW-Authenticate and a VES policyException body;
// - the resources: POST {prefix}/eventListener/v7 (one event) and
//   {prefix}/eventListener/v7/eventBatch (an eventList); another method is a 405 (Allow: POST),
//   another path a 404;
// - the Content-Type (application/json) and that the body parses;
// - that the single resource gets `{event}` and the batch resource `{eventList}` (non-empty, every
//   event of one domain, the VES 7.1 batch rule);
// - every body against the published VES 7.1.1 schema (CommonEventFormat_30.1.1.json, draft-04,
//   with ajv and ajv-draft-04): an invalid body is a 400 whose serviceException carries ajv's errors.
// A valid body is a 202 and its events are kept. Tests can make it unavailable (503), inject
// statuses, delay answers and restart the listener.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import ajvDraft04 from 'ajv-draft-04';
import type { ValidateFunction } from 'ajv';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { loopbackServer } from './http.js';
import { pace } from '../../helpers/wait.js';

export type VesAuth = { type: 'none' } | { type: 'basic'; username: string; password: string } | { type: 'bearer'; token: string };

export interface VesCollectorOptions {
  auth?: VesAuth;
  tls?: { cert: string; key: string };
  /** Path the listener is served under (`/ves`); default none. */
  prefix?: string;
}

export interface VesRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  status: number;
  /** The answer's body (the requestError of a refusal). */
  answer: string;
}

export interface VesEvent {
  commonEventHeader: Rec & { domain: string; reportingEntityName: string; sourceName: string; sequence: number; eventId: string };
  [block: string]: unknown;
}

export interface VesCollector {
  /** Base URL (with the prefix), for the sink's `url`. */
  url: string;
  port: number;
  requests: VesRequest[];
  /** Events accepted (202), in arrival order. */
  events: VesEvent[];
  /** Events accepted whose reportingEntityName is `name` (the sink's source_name). */
  eventsOf(name: string): VesEvent[];
  /** While true every request is answered 503 Service Unavailable. */
  unavailable: boolean;
  /** The next POSTs are answered with these statuses (one each, storing nothing). */
  failNext(statuses: number[]): void;
  /** The next `times` answers wait `ms` first. */
  delay(ms: number, times?: number): void;
  restart(downMs: number): Promise<void>;
  close(): Promise<void>;
}

const SCHEMA_PATH = join(import.meta.dirname, '..', '..', 'fixtures', 'ves', 'CommonEventFormat_30.1.1.json');
let validator: ValidateFunction | undefined;
// ajv-draft-04 is CommonJS (`module.exports = Ajv`, `exports.default = Ajv`): its class is the default export's `default`.
const Ajv04 = (ajvDraft04 as unknown as { default: typeof ajvDraft04.default }).default;

/** The schema's validator (draft-04), compiled once. */
export function vesValidator(): ValidateFunction {
  if (!validator) {
    const ajv = new Ajv04({ allErrors: true, strict: false });
    validator = ajv.compile(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as object);
  }
  return validator!;
}

/** A VES requestError body: a serviceException (SVC...) or a policyException (POL...). */
const requestError = (kind: 'serviceException' | 'policyException', messageId: string, text: string, variables: string[] = []) => ({
  requestError: { [kind]: { messageId, text, variables } },
});

const badRequest = (reason: string) => requestError('serviceException', 'SVC0002', 'Bad Parameter (%1)', [reason]);

function authorized(auth: VesAuth, h: IncomingMessage['headers']): boolean {
  if (auth.type === 'basic') return h.authorization === `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  if (auth.type === 'bearer') return h.authorization === `Bearer ${auth.token}`;
  return true;
}

export async function startVesCollector(opts: VesCollectorOptions = {}): Promise<VesCollector> {
  const auth = opts.auth ?? { type: 'none' };
  const prefix = (opts.prefix ?? '').replace(/\/+$/, '');
  const single = `${prefix}/eventListener/v7`;
  const batch = `${single}/eventBatch`;
  const requests: VesRequest[] = [];
  const events: VesEvent[] = [];
  const planned: number[] = [];
  let wait = { ms: 0, left: 0 };
  const validate = vesValidator();

  const collector: VesCollector = {
    url: '',
    port: 0,
    requests,
    events,
    eventsOf: (name) => events.filter((e) => e.commonEventHeader.reportingEntityName === name),
    unavailable: false,
    failNext: (s) => void planned.push(...s),
    delay: (ms, times = Infinity) => void (wait = { ms, left: times }),
    restart: async () => {},
    close: async () => {},
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const ch of req) chunks.push(ch as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url ?? '/', 'http://collector').pathname;
    const entry: VesRequest = { method: req.method ?? '', path, headers: req.headers, body, status: 0, answer: '' };
    requests.push(entry);
    const answer = (status: number, doc?: unknown, headers: Record<string, string> = {}) => {
      entry.status = status;
      entry.answer = doc === undefined ? '' : JSON.stringify(doc);
      res.writeHead(status, { ...(doc === undefined ? {} : { 'content-type': 'application/json' }), ...headers });
      res.end(entry.answer);
    };
    if (wait.left > 0) {
      wait.left--;
      await pace(wait.ms); // answers slowly on purpose
    }
    if (!authorized(auth, req.headers)) {
      const scheme = auth.type === 'basic' ? 'Basic realm="VES"' : 'Bearer realm="VES"';
      return answer(401, requestError('policyException', 'POL2000', 'Authentication failed'), { 'www-authenticate': scheme });
    }
    if (collector.unavailable)
      return answer(
        503,
        requestError('serviceException', 'SVC2000', 'The following service error occurred: %1. Error code is %2', ['Service Unavailable', '503']),
        { 'retry-after': '1' },
      );
    if (path !== single && path !== batch)
      return answer(
        404,
        requestError('serviceException', 'SVC2000', 'The following service error occurred: %1. Error code is %2', [`no resource ${path}`, '404']),
      );
    if (req.method !== 'POST') return answer(405, requestError('policyException', 'POL4001', 'Method %1 not allowed', [req.method ?? '']), { allow: 'POST' });
    const injected = planned.shift();
    if (injected)
      return answer(
        injected,
        requestError('serviceException', 'SVC2000', 'The following service error occurred: %1. Error code is %2', ['injected failure', String(injected)]),
      );
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json')
      return answer(
        400,
        requestError('serviceException', 'SVC2000', 'The following service error occurred: %1. Error code is %2', [
          'Incorrect message content-type; only accepts application/json messages',
          '400',
        ]),
      );
    let doc: Rec;
    try {
      doc = JSON.parse(body) as Rec;
    } catch (e) {
      return answer(400, badRequest(`the body is not JSON: ${(e as Error).message}`));
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return answer(400, badRequest('the body is not a JSON object'));
    const isBatch = path === batch;
    const key = isBatch ? 'eventList' : 'event';
    if (Object.keys(doc).length !== 1 || !(key in doc))
      return answer(400, badRequest(`${path} takes a body {"${key}": ...}; got the keys ${Object.keys(doc).join(', ') || 'none'}`));
    if (!validate(doc)) {
      const text = (validate.errors ?? [])
        .map(
          (e) =>
            `${e.instancePath || '/'} ${e.message ?? ''}${e.params && 'additionalProperty' in e.params ? ` '${String(e.params.additionalProperty)}'` : ''}`,
        )
        .join('; ');
      return answer(400, badRequest(`schema CommonEventFormat_30.1.1: ${text}`));
    }
    const list = (isBatch ? doc.eventList : [doc.event]) as VesEvent[];
    if (list.length === 0) return answer(400, badRequest('eventList is empty'));
    const domains = new Set(list.map((e) => e.commonEventHeader.domain));
    if (domains.size > 1) return answer(400, badRequest(`the events of a batch must share one domain; got ${[...domains].join(', ')}`));
    events.push(...list);
    return answer(202);
  };

  const server = await loopbackServer(opts.tls, handle, (res, e) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify(requestError('serviceException', 'SVC2000', 'The following service error occurred: %1. Error code is %2', [e.message, '500'])));
  });
  collector.port = server.port;
  collector.url = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${server.port}${prefix}`;
  collector.restart = server.restart;
  collector.close = server.close;
  return collector;
}

/** A record back from an `other` event: its hashMap, numbers read back from their text. */
export function recordOf(e: VesEvent): Rec {
  const map = ((e.otherFields as Rec | undefined)?.hashMap ?? (e.measurementFields as Rec | undefined)?.additionalFields ?? {}) as Record<string, string>;
  const out: Rec = {};
  for (const [k, v] of Object.entries(map)) out[k] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  return out;
}

export const VES_USER = 'ves-user';
export const VES_PASSWORD = 'ves-secret-pw';

export const vesPeer: PeerFixture = {
  type: 'ves',
  roles: ['sink'],
  badConfig: { role: 'sink', set: { domain: 'perf3gpp' }, path: 'domain' },
  async start(): Promise<Peer> {
    const c = await startVesCollector({ auth: { type: 'basic', username: VES_USER, password: VES_PASSWORD } });
    return {
      sink: {
        // The channel is the sink's source_name: the collector files events by reportingEntityName.
        config: (ch) => ({ type: 'ves', url: c.url, domain: 'other', source_name: ch, auth_type: 'basic', username: VES_USER, password: VES_PASSWORD }),
        async collect(ch): Promise<Collector> {
          return { records: () => c.eventsOf(ch).map(recordOf), close: async () => {} };
        },
      },
      wrongPort: (cfg) => ({ ...cfg, url: 'http://127.0.0.1:9' }),
      wrongCredentials: (cfg) => ({ ...cfg, password: 'wrong-password' }),
      disrupt: () => c.restart(1000),
      stop: () => c.close(),
    };
  },
};
