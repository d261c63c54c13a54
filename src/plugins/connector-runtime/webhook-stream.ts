// What the daemon-served push sources share (webhook, prometheus_rw): a path registered with the
// webhook hub (`POST /webhooks/<path>`), a bounded queue (full: 503), and under the daemon
// (services.stateDir) a spool on disk. Each body is appended to the spool before it is answered
// (202, or the source's own 2xx), and the spool is committed only once the unit holding it is
// delivered (done(true)). A crash therefore never loses an acknowledged body: the next start
// replays what was not committed. Delivery is at-least-once: bodies delivered just before a crash
// (commit not yet recorded) come again.
//
// The spool holds each body as it arrived; a source that decodes a wire format (remote write)
// does so when the unit is read (`read`), so the spool stays small and a replay decodes the same.
import { join } from 'node:path';
import { SourceError } from '../../core/errors.js';
import { Spool, type Position } from './spool.js';
import { normalizePath, type WebhookEndpoint, type WebhookHub, type WebhookMessage } from './webhook-hub.js';
import type { PluginContext, Rec, Source, SourceUnit } from '../types.js';
import { connectionReporter } from './reconnect.js';

export interface WebhookStreamConfig {
  path: string;
  secret?: string;
  max_queue_size: number;
}

/** One body held by the stream, as received. */
export interface HeldBody {
  body: Buffer;
  receivedAt: string;
  /** Spool position (absent without a spool). */
  position?: Position;
}

export interface WebhookStreamOptions {
  /** The source's key, for the error without a daemon and the log. */
  type: string;
  /** See WebhookEndpoint.acceptedStatus (default 202). */
  acceptedStatus?: WebhookEndpoint['acceptedStatus'];
  /** See WebhookEndpoint.validate: a reason when the body is malformed (400, never queued). */
  validate?(m: WebhookMessage): string | undefined;
  /** The messages a held body becomes when its unit is read (default: the body itself). */
  read?(m: HeldBody): Iterable<Buffer>;
  /**
   * Instead of `read`: the records a held body becomes (a source that decodes its wire format
   * itself, as otlp), and what of it could not be decoded (dead-lettered with its reason).
   * Called when the unit is handed to the pipeline.
   */
  decode?(m: HeldBody): { records: Rec[]; undecodable?: { raw: Buffer; why: string }[] };
  /**
   * A hub of the source's own (a source with listeners of its own, as otlp): the stream registers
   * its path there instead of on the daemon's, and runs without the daemon too (without a spool
   * then: what is queued is lost with the process).
   */
  hub?: WebhookHub;
  /** Report the served path as a connection (connecting until served, connected while served). */
  reportConnection?: boolean;
}

/** `<stateDir>/spool/<pipeline>/<path>`: `/` (and a bare `.` or `..`) escaped, so one path is one directory. */
export function spoolDir(stateDir: string, pipeline: string, path: string) {
  const name = encodeURIComponent(normalizePath(path)).replace(/^\.\.?$/, (d) => d.replace(/\./g, '%2E'));
  return join(stateDir, 'spool', pipeline, name);
}

// A spooled record is the receive time (toISOString(): 24 ASCII bytes) followed by the body.
const STAMP = 24;
const encode = (m: WebhookMessage) => Buffer.concat([Buffer.from(m.receivedAt, 'latin1'), m.body]);
const decode = (rec: Buffer, position: Position): HeldBody => ({ receivedAt: rec.toString('latin1', 0, STAMP), body: rec.subarray(STAMP), position });

/** The Source of a daemon-served push path (create() of webhook and prometheus_rw). */
export function webhookStream(c: WebhookStreamConfig, ctx: PluginContext, opts: WebhookStreamOptions): Source {
  let opening: Promise<Spool> | undefined;
  const read = opts.read ?? ((m: HeldBody) => [m.body]);
  return {
    async *units(signal: AbortSignal): AsyncGenerator<SourceUnit> {
      const hub = opts.hub ?? ctx.services?.webhooks;
      if (!hub) throw new SourceError(`the ${opts.type} source needs the daemon: run the pipeline with \`svc serve\`, not \`svc run\``);
      const connection = opts.reportConnection ? connectionReporter(ctx, opts.type) : undefined;
      connection?.('connecting');
      const stateDir = ctx.services?.stateDir;
      // The path is served from the start; bodies that arrive while the spool opens wait for it.
      opening = stateDir ? Spool.open(spoolDir(stateDir, ctx.pipeline, c.path), { log: ctx.log.child({ webhook_path: c.path }) }) : undefined;
      opening?.catch(() => {}); // awaited below; a failure ends the run there
      let spool: Spool | undefined;
      const queue: HeldBody[] = [];
      /** Bodies being written to the spool: they count against max_queue_size already. */
      let storing = 0;
      /**
       * Highest position that may be committed. A unit that was not delivered lowers it below its
       * first body, so nothing from there on is committed in this run and the next start replays it.
       */
      let ceiling = Infinity;
      let wake: (() => void) | undefined;

      const decoded = (batch: HeldBody[]): Pick<SourceUnit, 'records' | 'undecodable' | 'read'> => {
        if (!opts.decode) {
          return {
            async *read() {
              for (const m of batch) yield* read(m);
            },
          };
        }
        const records: Rec[] = [];
        const undecodable: { raw: Buffer; why: string }[] = [];
        for (const m of batch) {
          const d = opts.decode(m);
          for (const r of d.records) records.push(r);
          if (d.undecodable) for (const u of d.undecodable) undecodable.push(u);
        }
        return {
          records,
          undecodable: undecodable.length ? undecodable : undefined,
          async *read() {
            for (const r of records) yield Buffer.from(JSON.stringify(r));
          },
        };
      };
      const unit = (batch: HeldBody[]): SourceUnit => ({
        meta: { webhook_path: c.path, messages: batch.length, received_at: batch[0]!.receivedAt },
        size: batch.reduce((n, m) => n + m.body.length, 0),
        messages: true,
        ...decoded(batch),
        // The batch is in position order: committing its last position commits all of it.
        done: spool
          ? async (delivered) => {
              if (delivered) return spool!.commit(Math.min(batch.at(-1)!.position!, ceiling));
              if (ceiling === Infinity)
                ctx.log.warn(
                  { webhook_path: c.path, messages: batch.length },
                  `${opts.type} bodies not delivered: they and all later ones stay in the spool and are delivered again when the stream next starts`,
                );
              ceiling = Math.min(ceiling, batch[0]!.position! - 1);
            }
          : undefined,
      });

      const unregister = hub.register(c.path, {
        pipeline: ctx.pipeline,
        secret: c.secret,
        maxQueue: c.max_queue_size,
        acceptedStatus: opts.acceptedStatus,
        validate: opts.validate,
        hasRoom: () => queue.length + storing < c.max_queue_size,
        async offer(m) {
          if (queue.length + storing >= c.max_queue_size) return false;
          if (!opening) {
            queue.push(m);
            wake?.();
            return true;
          }
          storing++;
          try {
            const record = encode(m);
            const s = await opening;
            // The spool resolves appends in position order, and this push runs right as each
            // resolves, so the queue stays in position order (which commit relies on).
            const position = await s.append(record);
            queue.push({ body: m.body, receivedAt: m.receivedAt, position });
            return true;
          } finally {
            storing--;
            wake?.();
          }
        },
      });
      // On stop: accept nothing more (404), but hand on everything already accepted.
      const onAbort = () => {
        unregister();
        wake?.();
      };
      signal.addEventListener('abort', onAbort);
      try {
        spool = await opening;
        connection?.('connected');
        // First what an earlier process accepted and did not deliver (new bodies wait in the queue
        // meanwhile: their positions are all higher), in units of at most max_queue_size bodies.
        if (spool) {
          const batch: HeldBody[] = [];
          for await (const r of spool.replay()) {
            if (signal.aborted) {
              // Stopped mid-replay: the rest stays in the spool, so nothing past it may be committed.
              ceiling = Math.min(ceiling, r.position - 1);
              break;
            }
            batch.push(decode(r.body, r.position));
            if (batch.length >= c.max_queue_size) yield unit(batch.splice(0));
          }
          if (batch.length) yield unit(batch);
        }
        for (;;) {
          if (queue.length === 0) {
            if (signal.aborted && storing === 0) break;
            await new Promise<void>((r) => (wake = r));
            wake = undefined;
            continue;
          }
          // Everything queued right now becomes one unit: one decode pass, one write per sink.
          yield unit(queue.splice(0, queue.length));
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        unregister();
      }
    },
    // After the runner's last done(): the final commit mark reaches the disk.
    async close() {
      const spool = await opening?.catch(() => undefined);
      await spool?.close();
    },
  };
}
