// Source `webhook` (stream): every POST to /webhooks/<path> becomes one unit of input. The body is
// accepted (202) into a bounded queue; a full queue answers 503 so senders back off.
import { Type } from '@sinclair/typebox';
import { SourceError } from '../../errors.js';
import type { WebhookMessage } from '../../engine/webhook-hub.js';
import { defineSource, type SourceUnit } from '../types.js';

const config = Type.Object(
  {
    path: Type.String({ minLength: 1, pattern: '^/?[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*/?$', description: 'Served at POST /webhooks/<path>; nested paths (a/b/c) are allowed.' }),
    secret: Type.Optional(Type.String({ minLength: 1, description: 'Bearer token the sender must present (Authorization: Bearer <secret>); 401 otherwise.' })),
    max_queue_size: Type.Integer({ minimum: 1, default: 1000, description: 'Requests held before the pipeline takes them; beyond it the endpoint answers 503.' }),
  },
  { additionalProperties: false },
);

export default defineSource({
  key: 'webhook',
  summary: 'Receive HTTP POST bodies at /webhooks/<path> (VES events, alarms, JSON from any system).',
  mode: 'stream',
  config,
  examples: [
    { title: 'Alarm webhook with a shared secret', yaml: 'type: webhook\npath: alarms/core\nsecret: ${ALARM_SECRET:-change-me}\nmax_queue_size: 5000' },
  ],
  create(c, ctx) {
    return {
      async *units(signal: AbortSignal): AsyncGenerator<SourceUnit> {
        const hub = ctx.services?.webhooks;
        if (!hub) throw new SourceError('the webhook source needs the daemon: run the pipeline with `svc serve`, not `svc run`');
        const queue: WebhookMessage[] = [];
        let wake: (() => void) | undefined;
        const unregister = hub.register(c.path, {
          pipeline: ctx.pipeline,
          secret: c.secret,
          maxQueue: c.max_queue_size,
          offer(m) {
            if (queue.length >= c.max_queue_size) return false;
            queue.push(m);
            wake?.();
            return true;
          },
        });
        // On stop: accept nothing more (404), but hand on everything already accepted (202).
        const onAbort = () => {
          unregister();
          wake?.();
        };
        signal.addEventListener('abort', onAbort);
        try {
          for (;;) {
            if (queue.length === 0) {
              if (signal.aborted) break;
              await new Promise<void>((r) => (wake = r));
              wake = undefined;
              continue;
            }
            // Everything queued right now becomes one unit: one decode pass, one write per sink.
            const batch = queue.splice(0, queue.length);
            yield {
              meta: { webhook_path: c.path, messages: batch.length, received_at: batch[0]!.receivedAt },
              size: batch.reduce((n, m) => n + m.body.length, 0),
              messages: true,
              async *read() {
                for (const m of batch) yield m.body;
              },
            };
          }
        } finally {
          signal.removeEventListener('abort', onAbort);
          unregister();
        }
      },
    };
  },
});
