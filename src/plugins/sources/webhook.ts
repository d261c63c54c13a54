// Source `webhook` (stream): every POST to /webhooks/<path> becomes one unit of input. The body is
// accepted (202) into a bounded queue; a full queue answers 503 so senders back off.
//
// Under the daemon (services.stateDir) each body is appended to a spool on disk before the 202, and
// the spool is committed only once the unit holding it is delivered (done(true)). A crash therefore
// never loses an acknowledged body: the next start replays what was not committed. Delivery is
// at-least-once: bodies delivered just before a crash (commit not yet recorded) come again.
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { SourceError } from '../../errors.js';
import { Spool, type Position } from '../../engine/spool.js';
import { normalizePath, type WebhookMessage } from '../../engine/webhook-hub.js';
import { defineSource, type SourceUnit } from '../types.js';

const config = Type.Object(
  {
    path: Type.String({ minLength: 1, pattern: '^/?[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*/?$', description: 'Served at POST /webhooks/<path>; nested paths (a/b/c) are allowed.' }),
    secret: Type.Optional(Type.String({ minLength: 1, writeOnly: true, description: 'Bearer token the sender must present (Authorization: Bearer <secret>); 401 otherwise.' })),
    max_queue_size: Type.Integer({ minimum: 1, default: 1000, description: 'Requests held before the pipeline takes them; beyond it the endpoint answers 503.' }),
  },
  { additionalProperties: false },
);

interface Held {
  body: Buffer;
  receivedAt: string;
  /** Spool position (absent without a spool). */
  position?: Position;
}

/** `<stateDir>/spool/<pipeline>/<path>`: `/` (and a bare `.` or `..`) escaped, so one path is one directory. */
export function spoolDir(stateDir: string, pipeline: string, path: string) {
  const name = encodeURIComponent(normalizePath(path)).replace(/^\.\.?$/, (d) => d.replace(/\./g, '%2E'));
  return join(stateDir, 'spool', pipeline, name);
}

// A spooled record is the receive time (toISOString(): 24 ASCII bytes) followed by the body.
const STAMP = 24;
const encode = (m: WebhookMessage) => Buffer.concat([Buffer.from(m.receivedAt, 'latin1'), m.body]);
const decode = (rec: Buffer, position: Position): Held => ({ receivedAt: rec.toString('latin1', 0, STAMP), body: rec.subarray(STAMP), position });

export default defineSource({
  key: 'webhook',
  summary: 'Receive HTTP POST bodies at /webhooks/<path> (VES events, alarms, JSON from any system).',
  mode: 'stream',
  delivery: { guarantee: 'at-least-once', why: 'a body is answered 202 only once it is on disk in the spool, and committed there only after its unit was delivered; a crash replays what was not committed.' },
  config,
  // Nothing to reach: the daemon serves the path itself once the stream runs.
  async test() {},
  examples: [
    { title: 'Alarm webhook with a shared secret', yaml: 'type: webhook\npath: alarms/core\nsecret: ${ALARM_SECRET:-change-me}\nmax_queue_size: 5000' },
  ],
  create(c, ctx) {
    let opening: Promise<Spool> | undefined;
    return {
      async *units(signal: AbortSignal): AsyncGenerator<SourceUnit> {
        const hub = ctx.services?.webhooks;
        if (!hub) throw new SourceError('the webhook source needs the daemon: run the pipeline with `svc serve`, not `svc run`');
        const stateDir = ctx.services?.stateDir;
        // The path is served from the start; bodies that arrive while the spool opens wait for it.
        opening = stateDir ? Spool.open(spoolDir(stateDir, ctx.pipeline, c.path), { log: ctx.log.child({ webhook_path: c.path }) }) : undefined;
        opening?.catch(() => {}); // awaited below; a failure ends the run there
        let spool: Spool | undefined;
        const queue: Held[] = [];
        /** Bodies being written to the spool: they count against max_queue_size already. */
        let storing = 0;
        /**
         * Highest position that may be committed. A unit that was not delivered lowers it below its
         * first body, so nothing from there on is committed in this run and the next start replays it.
         */
        let ceiling = Infinity;
        let wake: (() => void) | undefined;

        const unit = (batch: Held[]): SourceUnit => ({
          meta: { webhook_path: c.path, messages: batch.length, received_at: batch[0]!.receivedAt },
          size: batch.reduce((n, m) => n + m.body.length, 0),
          messages: true,
          async *read() {
            for (const m of batch) yield m.body;
          },
          // The batch is in position order: committing its last position commits all of it.
          done: spool
            ? async (delivered) => {
                if (delivered) return spool!.commit(Math.min(batch.at(-1)!.position!, ceiling));
                if (ceiling === Infinity) ctx.log.warn({ webhook_path: c.path, messages: batch.length }, 'webhook bodies not delivered: they and all later ones stay in the spool and are delivered again when the stream next starts');
                ceiling = Math.min(ceiling, batch[0]!.position! - 1);
              }
            : undefined,
        });

        const unregister = hub.register(c.path, {
          pipeline: ctx.pipeline,
          secret: c.secret,
          maxQueue: c.max_queue_size,
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
        // On stop: accept nothing more (404), but hand on everything already accepted (202).
        const onAbort = () => {
          unregister();
          wake?.();
        };
        signal.addEventListener('abort', onAbort);
        try {
          spool = await opening;
          // First what an earlier process accepted and did not deliver (new bodies wait in the queue
          // meanwhile: their positions are all higher), in units of at most max_queue_size bodies.
          if (spool) {
            let batch: Held[] = [];
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
  },
});
