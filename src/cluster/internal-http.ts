// The HTTP calls between manager and workers: /agent/* (manager -> worker) and /api/internal/*
// (worker -> manager). Every call carries the API key (SVC_INTERNAL_AUTH_MODE checks it) and the
// manager's leadership epoch, so a worker can refuse a manager that was superseded.
import type { ProcessedFiles } from '../plugins/types.js';
import type { TransformStateIO } from '../engine/runner.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import type { OutboxEntry } from './outbox.js';

/** Header that carries the manager's leadership epoch on every /agent/* call. */
export const EPOCH_HEADER = 'x-svc-epoch';
/** Header a worker's transform-state write carries: the run it belongs to. */
export const RUN_ID_HEADER = 'x-svc-run-id';

export interface CallOptions {
  apiKey?: string;
  epoch?: number;
  runId?: string;
  timeoutMs?: number;
}

export interface CallResult {
  status: number;
  /**
   * The parsed JSON answer: an object on every /agent/* and /api/internal/* route, else whatever
   * came (the text when it is not JSON, undefined when empty). Read it with `?.` and check the values.
   */
  body: { readonly [key: string]: unknown } | undefined;
}

/** The headers of an internal call: the key, the epoch, the run (also a relayed tap's WebSocket, src/cluster/tap-relay.ts). */
export function internalHeaders(o: CallOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  if (o.apiKey) headers['x-api-key'] = o.apiKey;
  if (o.epoch !== undefined) headers[EPOCH_HEADER] = String(o.epoch);
  if (o.runId) headers[RUN_ID_HEADER] = o.runId;
  return headers;
}

/** One JSON call; network failures and timeouts throw with the URL in the message. */
export async function internalCall(method: 'GET' | 'POST' | 'PUT', url: string, body: unknown, o: CallOptions = {}): Promise<CallResult> {
  const headers = internalHeaders(o);
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
    });
  } catch (e) {
    const why =
      e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${(o.timeoutMs ?? 10_000) / 1000} s` : errorMessage((e as Error).cause ?? e);
    throw new Error(`${method} ${url}: ${why}`, { cause: e });
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed as CallResult['body'] };
}

/** Why a non-2xx answer failed, from its `{detail}`. */
export const detailOf = (r: CallResult) => (typeof r.body === 'object' && r.body && 'detail' in r.body ? String(r.body.detail) : `HTTP ${r.status}`);

/**
 * The manager as a worker reaches it: SVC_MANAGER_URL, one URL (on Kubernetes the Service, which
 * reaches only the leader) or several, comma-separated, tried in turn from the last one that
 * answered: a standby answers 503 and a stopped manager does not answer, so a call goes on to the
 * next. Any other answer (2xx, or a refusal) is the leader's.
 */
export class ManagerLink {
  readonly urls: string[];
  private current = 0;

  constructor(
    setting: string,
    private readonly o: CallOptions,
  ) {
    this.urls = setting
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean);
  }

  get configured(): boolean {
    return this.urls.length > 0;
  }

  /** The URL that answered last (where syncs go first). */
  get url(): string {
    return this.urls[this.current] ?? '';
  }

  async call(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, extra: CallOptions = {}): Promise<CallResult> {
    if (!this.configured) throw new Error('SVC_MANAGER_URL is empty');
    let last: unknown;
    for (let i = 0; i < this.urls.length; i++) {
      const k = (this.current + i) % this.urls.length;
      try {
        const r = await internalCall(method, new URL(path, this.urls[k]).toString(), body, { ...this.o, ...extra });
        if (r.status === 503 && i < this.urls.length - 1) {
          last = new Error(`${this.urls[k]}: ${detailOf(r)}`);
          continue;
        }
        this.current = k;
        return r;
      } catch (e) {
        last = e;
      }
    }
    throw last;
  }
}

/**
 * The outbox's sender: 2xx is delivered; 400, 404, 409, 413 and 422 will never be taken (a callback
 * for a run the manager does not know or superseded); anything else (5xx, 401 while keys are being
 * rotated, no answer) is retried.
 */
export function managerSender(link: ManagerLink, log: Logger) {
  return async (e: OutboxEntry): Promise<'sent' | 'refused' | 'retry'> => {
    if (!link.configured) return 'retry';
    try {
      const r = await link.call('POST', e.path, e.body);
      if (r.status >= 200 && r.status < 300) return 'sent';
      if ([400, 404, 409, 413, 422].includes(r.status)) {
        log.warn({ path: e.path, status: r.status, detail: detailOf(r) }, 'manager refused a callback');
        return 'refused';
      }
      log.warn({ path: e.path, status: r.status, detail: detailOf(r) }, 'callback not accepted yet; retrying');
      return 'retry';
    } catch (err) {
      log.warn({ path: e.path, err: errorMessage(err) }, 'manager unreachable; callback kept in the outbox');
      return 'retry';
    }
  };
}

/** The state in a manager's answer when it was kept under this config (`hash`); else none, said in the log. */
function stateOfConfig(r: { body?: { config_sha256?: unknown; state?: unknown } }, hash: string, log: Logger): Record<string, unknown> | null {
  if (r.body?.config_sha256 !== hash) {
    log.warn({ stored: r.body?.config_sha256, current: hash }, 'the manager holds the state of another config of this pipeline; starting empty');
    return null;
  }
  return (r.body.state as Record<string, unknown>) ?? null;
}

/**
 * Transform state of a run on a worker: read from the manager at run start, written back after a
 * successful run (the runner calls save only then). The manager checks the config hash.
 */
export function managerStateIO(link: ManagerLink, pipeline: string, hash: string, runId: string, log: Logger): TransformStateIO {
  const path = `/api/internal/transform-state/${encodeURIComponent(pipeline)}`;
  return {
    async load() {
      const r = await link.call('GET', path);
      if (r.status === 404) return null;
      if (r.status !== 200) throw new Error(`transform state of '${pipeline}' could not be read from the manager: ${detailOf(r)}`);
      return stateOfConfig(r, hash, log);
    },
    async save(state) {
      const r = await link.call('PUT', path, { pipeline, state, config_sha256: hash }, { runId });
      if (r.status !== 200) throw new Error(`transform state of '${pipeline}' could not be written to the manager: ${detailOf(r)}`);
    },
  };
}

/**
 * Transform state of a shard of a sharded batch run (issue 33): the state of the targets the shard
 * owns, read from the manager at run start and written back after a successful run. The run id
 * names the shard; the manager looks its targets up, joins their stored parts on read and splits
 * the state by target on write (src/api/routes/transform-state.ts).
 */
export function managerShardStateIO(link: ManagerLink, pipeline: string, hash: string, runId: string, log: Logger): TransformStateIO {
  const path = `/api/internal/transform-state/${encodeURIComponent(pipeline)}/shard`;
  return {
    async load() {
      const r = await link.call('GET', path, undefined, { runId });
      if (r.status !== 200) throw new Error(`transform state of shard ${runId} of '${pipeline}' could not be read from the manager: ${detailOf(r)}`);
      return stateOfConfig(r, hash, log);
    },
    async save(state) {
      const r = await link.call('PUT', path, { pipeline, state, config_sha256: hash }, { runId });
      if (r.status !== 200) throw new Error(`transform state of shard ${runId} of '${pipeline}' could not be written to the manager: ${detailOf(r)}`);
      const unplaced = Number(r.body?.unplaced ?? 0);
      if (unplaced > 0)
        log.warn({ unplaced }, 'state of series whose records named no target of this shard (no `_target`) was not kept: they start again as first samples');
    },
  };
}

/**
 * A pipeline's `skip_processed` memory on a worker: the manager's database, so that what one worker
 * processed no other worker processes again. A key is remembered in the worker's own file first
 * (asked first: no round trip for what this worker did) and sent to the manager through the outbox
 * (`deliver`), so it reaches the manager whatever happens after the file was finalized. A key not
 * known here is asked of the manager; a manager that cannot answer fails the run rather than let it
 * read a file twice.
 */
export function managerProcessedFiles(
  link: ManagerLink,
  pipeline: string,
  local: ProcessedFiles,
  deliver: (path: string, body: unknown) => Promise<void>,
): ProcessedFiles {
  const path = `/api/internal/processed/${encodeURIComponent(pipeline)}`;
  return {
    async has(key) {
      if (await local.has(key)) return true;
      const r = await link.call('GET', `${path}?key=${encodeURIComponent(key)}`);
      if (r.status !== 200) throw new Error(`processed-file memory of '${pipeline}' could not be read from the manager: ${detailOf(r)}`);
      return r.body?.processed === true;
    },
    async add(key) {
      await local.add(key);
      await deliver(path, { key });
    },
  };
}
