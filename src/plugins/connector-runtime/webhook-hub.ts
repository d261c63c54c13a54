// Connects `POST /webhooks/<path>` to the webhook sources of running pipelines. A source registers
// its path with a bounded queue; the HTTP route hands each body to the hub, which answers with
// what the route should reply (202 queued, 401, 404, 503 full or not stored). 'queued' comes only
// once the source holds the body durably (its spool append is on disk), so a 202 survives a crash.
import { timingSafeEqual } from 'node:crypto';

export interface WebhookMessage {
  body: Buffer;
  contentType?: string;
  receivedAt: string;
}

/**
 * What the route answers; `{ failed }`: the body could not be stored (the reason, for a 503);
 * `{ invalid }`: the source refused the body as malformed (the reason, for a 400: resending won't help).
 */
export type Delivery = 'queued' | 'unknown' | 'unauthorized' | 'full' | { failed: string } | { invalid: string };

export interface WebhookEndpoint {
  pipeline: string;
  secret?: string;
  maxQueue: number;
  /** Status of a 'queued' answer (default 202); 204 answers without a body (Prometheus remote write). */
  acceptedStatus?: 200 | 202 | 204;
  /** Checks an authorized body before it is offered: a reason when it is malformed (answered 400). */
  validate?(m: WebhookMessage): string | undefined;
  /** False while the queue is full: answered 503 before `validate` spends any work on the body. */
  hasRoom?(): boolean;
  /**
   * Called with each authorized message; resolves true once the source holds it (on disk when it
   * spools), false when its queue is full; rejects when it could not be stored.
   */
  offer(m: WebhookMessage): Promise<boolean>;
}

export const normalizePath = (p: string) => p.replace(/^\/+|\/+$/g, '').replace(/\/{2,}/g, '/');

function sameSecret(given: string, want: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class WebhookHub {
  private readonly endpoints = new Map<string, WebhookEndpoint>();

  /** Serves `path` for a pipeline; throws when another pipeline already serves it. */
  register(path: string, ep: WebhookEndpoint): () => void {
    const key = normalizePath(path);
    const other = this.endpoints.get(key);
    if (other && other.pipeline !== ep.pipeline) throw new Error(`webhook path '/webhooks/${key}' is already served by pipeline '${other.pipeline}'`);
    this.endpoints.set(key, ep);
    return () => {
      if (this.endpoints.get(key) === ep) this.endpoints.delete(key);
    };
  }

  has(path: string) {
    return this.endpoints.has(normalizePath(path));
  }

  /** The status of a 'queued' answer for `path` (202 unless its source asked for another). */
  acceptedStatus(path: string): number {
    return this.endpoints.get(normalizePath(path))?.acceptedStatus ?? 202;
  }

  /** Spec doc 2 section 5 rule 6: with a secret, `Authorization: Bearer <secret>` is required. */
  async deliver(path: string, authorization: string | undefined, m: WebhookMessage): Promise<Delivery> {
    const ep = this.endpoints.get(normalizePath(path));
    if (!ep) return 'unknown';
    if (ep.secret) {
      // The auth scheme is case-insensitive (RFC 7235), as for session tokens: `bearer x` counts too.
      const given = authorization === undefined ? undefined : /^\s*Bearer\s+(.+?)\s*$/i.exec(authorization)?.[1];
      if (given === undefined || !sameSecret(given, ep.secret)) return 'unauthorized';
    }
    if (ep.hasRoom && !ep.hasRoom()) return 'full';
    const invalid = ep.validate?.(m);
    if (invalid !== undefined) return { invalid };
    try {
      return (await ep.offer(m)) ? 'queued' : 'full';
    } catch (e) {
      return { failed: e instanceof Error ? e.message : String(e) };
    }
  }
}
