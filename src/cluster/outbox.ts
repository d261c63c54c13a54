// A worker's callbacks to the manager (final stats, run-complete) wait here on the worker's volume
// until the manager answers 2xx: a manager restart or a network cut never loses a run's outcome,
// and a worker restarted on its volume sends what it had not delivered. One file per callback,
// written durably, sent oldest first; the manager stores each run-complete once, so sending one
// twice (a crash between the 2xx and the delete) is harmless.
import fs from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import { writeFileDurably } from '../util/durable.js';

export interface OutboxEntry {
  /** Path under the manager's base URL, e.g. /api/internal/run-complete. */
  path: string;
  body: unknown;
}

/** Sends one entry: 'sent' (2xx), 'refused' (the manager will never take it), or 'retry'. */
export type Send = (e: OutboxEntry) => Promise<'sent' | 'refused' | 'retry'>;

const MAX_DELAY_MS = 30_000;

export class Outbox {
  private seq = 0;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private delayMs: number;
  private closed = false;
  /** Resolvers of flush() calls waiting for the outbox to be empty. */
  private emptyWaiters: (() => void)[] = [];

  constructor(
    private readonly dir: string,
    private readonly send: Send,
    private readonly log: Logger,
    private readonly baseDelayMs = 1000,
  ) {
    this.delayMs = baseDelayMs;
  }

  /** Picks up entries a previous process left and starts sending. */
  async open(): Promise<number> {
    await fs.mkdir(this.dir, { recursive: true });
    const left = await this.files();
    this.seq = left.length ? Number.parseInt(left.at(-1)!, 10) + 1 : 0;
    if (left.length) this.log.info({ callbacks: left.length }, 'outbox: callbacks left by the previous process will be sent');
    this.kick();
    return left.length;
  }

  /** Stores the entry durably (it is sent even if this process dies next), then sends. */
  async push(entry: OutboxEntry): Promise<void> {
    const name = `${String(this.seq++).padStart(12, '0')}.json`;
    await writeFileDurably(path.join(this.dir, name), JSON.stringify(entry));
    this.kick();
  }

  /** Entries not delivered yet. */
  async pending(): Promise<number> {
    return (await this.files()).length;
  }

  /** Resolves when everything is delivered, or after `ms` (then false). */
  async flush(ms: number): Promise<boolean> {
    if ((await this.pending()) === 0) return true;
    return new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), ms);
      this.emptyWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
      this.kick();
    });
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private async files(): Promise<string[]> {
    return (await fs.readdir(this.dir)).filter((f) => /^\d{12}\.json$/.test(f)).sort();
  }

  /** Sends now unless a pass is running (it picks up new files) or a retry is waiting. */
  private kick() {
    if (this.closed || this.running) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.drain().finally(() => (this.running = undefined));
  }

  private async drain(): Promise<void> {
    for (;;) {
      const files = await this.files().catch(() => []);
      if (files.length === 0) {
        this.delayMs = this.baseDelayMs;
        for (const w of this.emptyWaiters.splice(0)) w();
        return;
      }
      for (const f of files) {
        if (this.closed) return;
        const file = path.join(this.dir, f);
        let entry: OutboxEntry;
        try {
          entry = JSON.parse(await fs.readFile(file, 'utf8')) as OutboxEntry;
        } catch (e) {
          // A torn file cannot come from writeFileDurably; keep it aside for the operator, never block the rest.
          this.log.error({ file, err: errorMessage(e) }, 'outbox: unreadable callback set aside');
          await fs.rename(file, `${file}.bad`).catch(() => undefined);
          continue;
        }
        const outcome = await this.send(entry).catch(() => 'retry' as const);
        if (outcome === 'retry') {
          // In order: nothing after a failed callback goes first (final stats come before run-complete).
          this.timer = setTimeout(() => this.kick(), this.delayMs);
          this.timer.unref();
          this.delayMs = Math.min(MAX_DELAY_MS, this.delayMs * 2);
          return;
        }
        if (outcome === 'refused') this.log.error({ path: entry.path }, 'outbox: the manager refused a callback for good; dropped');
        this.delayMs = this.baseDelayMs;
        await fs.rm(file, { force: true });
      }
    }
  }
}
