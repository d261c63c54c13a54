// The tap in manager mode (issue 29, item 3): GET /api/pipelines/{name}/tap on the manager opens the
// same tap on every worker that holds a run of the pipeline (its placement's slots, or the worker of
// a plain run) at GET /agent/pipelines/{name}/tap, and relays their samples with a `worker` tag.
// The holders are looked at again every second: a worker that gets a slot while the tap is open is
// tapped too, one that loses it is let go. A worker's tap that closes (the worker restarts, its
// slot's run restarts, a network cut) is opened again with the runtime's one backoff.
//
// Rate and limit are the manager's: each worker is asked for the full rate and what is left of the
// limit, and the manager takes samples from them through one budget (the same token bucket as a
// standalone tap), so the client gets at most `rate` per second and exactly `limit` in all however
// the records spread over the workers, and every worker tap ends when it is reached. The price is at
// most `rate` samples per second per worker on the manager's links, of which it drops the surplus.
import WebSocket from 'ws';
import { TapBudget, type TapOptions } from '../engine/tap.js';
import { tapStageName, type TapFeed, type TapOut } from '../engine/tap-routes.js';
import { reconnectDelayMs } from '../plugins/connector-runtime/reconnect.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import { internalHeaders, type CallOptions } from './internal-http.js';

/** A worker that holds a run of the pipeline: the manager's name for it, and its agent's URL. */
export interface TapHolder {
  id: string;
  url: string;
}

export interface TapRelayDeps {
  /** The workers holding runs of the pipeline now. */
  holders(pipeline: string): TapHolder[];
  exists(pipeline: string): boolean;
  /** The key and epoch of calls to workers. */
  call(): CallOptions;
  log: Logger;
  /** How often the holders are looked at again (ms). */
  syncMs?: number;
}

export class TapRelay {
  constructor(private readonly deps: TapRelayDeps) {}

  feed(pipeline: string): TapFeed {
    return { attach: (opts, out) => this.attach(pipeline, opts, out) };
  }

  private attach(pipeline: string, opts: TapOptions, out: TapOut): () => void {
    const budget = new TapBudget(opts.rate, opts.limit);
    const links = new Map<string, WorkerTap>();
    let over = false;
    const finish = (reason?: string) => {
      if (over) return;
      over = true;
      clearInterval(timer);
      for (const l of links.values()) l.close();
      links.clear();
      if (reason !== undefined) out.end(reason);
    };
    const records = (lines: string[], worker: string) => {
      if (over) return;
      budget.available();
      const n = budget.take(lines.length);
      if (n > 0) out.records(n < lines.length ? lines.slice(0, n) : lines, worker);
      if (budget.spent) finish(`limit of ${opts.limit} records reached`);
    };
    const sync = () => {
      if (over) return;
      if (!this.deps.exists(pipeline)) return finish(`pipeline '${pipeline}' was deleted`);
      const holders = new Map(this.deps.holders(pipeline).map((h) => [h.id, h]));
      for (const [id, link] of links) {
        if (holders.get(id)?.url === link.url) continue;
        link.close();
        links.delete(id);
        out.frame({ type: 'status', worker: id, running: false, detached: 'the worker no longer holds a run of the pipeline' });
      }
      for (const h of holders.values()) {
        if (links.has(h.id)) continue;
        links.set(
          h.id,
          new WorkerTap(h, {
            pipeline,
            opts,
            remaining: () => opts.limit - budget.sent,
            call: this.deps.call,
            records,
            frame: (f) => !over && out.frame(f),
            log: this.deps.log,
          }),
        );
      }
    };
    const timer = setInterval(sync, this.deps.syncMs ?? 1000);
    timer.unref();
    sync();
    return () => finish();
  }
}

interface WorkerTapOptions {
  pipeline: string;
  opts: TapOptions;
  remaining(): number;
  call(): CallOptions;
  records(lines: string[], worker: string): void;
  frame(f: object): void;
  log: Logger;
}

/** One worker's tap, opened again after it closes until close() is called. */
class WorkerTap {
  readonly id: string;
  readonly url: string;
  private socket?: WebSocket;
  private retry?: NodeJS.Timeout;
  private attempt = 0;
  private closed = false;
  /** The last status frame about this worker, so that a failing worker is reported once per reason. */
  private told = '';

  constructor(
    holder: TapHolder,
    private readonly o: WorkerTapOptions,
  ) {
    this.id = holder.id;
    this.url = holder.url;
    this.open();
  }

  private open() {
    const { opts, pipeline } = this.o;
    const q = new URLSearchParams({ stage: tapStageName(opts.stage), rate: String(opts.rate), limit: String(Math.max(1, this.o.remaining())) });
    if (opts.filter) q.set('filter', opts.filter);
    const target = `${this.url.replace(/^http/, 'ws')}/agent/pipelines/${encodeURIComponent(pipeline)}/tap?${q.toString()}`;
    let headers: Record<string, string>;
    try {
      headers = internalHeaders(this.o.call());
    } catch (e) {
      // No epoch to send (this manager is losing its lease): nothing to call workers with now.
      return this.again(errorMessage(e));
    }
    const ws = new WebSocket(target, { headers, handshakeTimeout: 10_000 });
    this.socket = ws;
    let why: string | undefined;
    ws.on('open', () => (this.attempt = 0));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        let detail = body;
        try {
          detail = String((JSON.parse(body) as { detail?: unknown }).detail ?? body);
        } catch {
          // not JSON: the text
        }
        why = `HTTP ${res.statusCode}: ${detail}`;
        ws.terminate();
      });
    });
    ws.on('message', (data) => this.frame(String(data as Buffer)));
    ws.on('error', (e) => (why ??= errorMessage(e)));
    ws.on('close', () => {
      if (this.socket === ws) this.socket = undefined;
      this.again(why);
    });
  }

  /** Opens the tap again after the backoff; `why` it closed, when it failed. */
  private again(why: string | undefined) {
    if (this.closed) return;
    if (why) {
      this.status({ running: false, error: why });
      this.o.log.debug({ pipeline: this.o.pipeline, worker: this.id, err: why }, 'tap of a worker not open; trying again');
    }
    this.attempt++;
    this.retry = setTimeout(() => this.open(), reconnectDelayMs(this.attempt, 1));
    this.retry.unref();
  }

  private frame(text: string) {
    let f: { type?: unknown; records?: unknown; count?: unknown; running?: unknown };
    try {
      f = JSON.parse(text) as typeof f;
    } catch {
      return;
    }
    if (f.type === 'records' && Array.isArray(f.records))
      this.o.records(
        f.records.map((r) => JSON.stringify(r)),
        this.id,
      );
    else if (f.type === 'dropped') this.o.frame({ type: 'dropped', count: Number(f.count) || 0, worker: this.id });
    else if (f.type === 'status') this.status({ running: f.running === true });
    // `tap` (the worker's hello) says nothing new; after `end` the worker closes and the tap is opened again.
  }

  private status(s: { running: boolean; error?: string }) {
    const text = JSON.stringify(s);
    if (text === this.told) return;
    this.told = text;
    this.o.frame({ type: 'status', worker: this.id, ...s });
  }

  close() {
    this.closed = true;
    clearTimeout(this.retry);
    const ws = this.socket;
    this.socket = undefined;
    if (ws?.readyState === WebSocket.OPEN) ws.close(1000);
    else ws?.terminate();
  }
}
