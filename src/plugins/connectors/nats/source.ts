// Source `nats` (stream): a core NATS subscription, in a queue group by default (the pipeline name),
// so the workers of one pipeline share the messages. Core NATS keeps nothing and acknowledges
// nothing: a message published while this source is disconnected, paused or behind is gone for it
// (at-most-once). Backpressure: above HIGH_WATER queued messages the subscription is dropped
// (UNSUB) until the pipeline catches up, so memory stays bounded; in a queue group the server then
// hands the messages to the other members.
import { Type } from '@sinclair/typebox';
import type { Msg, Subscription } from '@nats-io/transport-node';
import { reconnectFields } from '../../connector-runtime/reconnect.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource, type SourceMeta } from '../../types.js';
import { authFields, connectNats, lintAuth, onLost, serverFields } from './client.js';

/** Most messages in one unit. */
const MAX_BATCH = 1000;
/** Queued messages above which the subscription is dropped until half of them are delivered. */
export const HIGH_WATER = 10_000;

const config = Type.Object(
  {
    ...serverFields,
    subject: Type.String({
      minLength: 1,
      pattern: '^\\S+$',
      description:
        'Subject to subscribe to; wildcards allowed (`*` one token, `>` all remaining tokens). Each message carries its own subject in its metadata (`subject`).',
    }),
    queue_group: Type.Optional(
      Type.String({
        pattern: '^\\S*$',
        description:
          "Queue group: the subscribers of one group share the messages (each message goes to one of them). Default: the pipeline name. '' subscribes without a group: every subscriber (every worker) gets every message.",
      }),
    ),
    ...authFields,
    ...reconnectFields(),
  },
  { additionalProperties: false },
);

/** The metadata of a message; messages alike share one object (the runtime's cheap case for units). */
function metaOf(m: Msg, last: { meta?: SourceMeta }): SourceMeta {
  if (!m.reply && !m.headers) {
    if (last.meta?.subject === m.subject && Object.keys(last.meta).length === 1) return last.meta;
    return (last.meta = { subject: m.subject });
  }
  const meta: SourceMeta = { subject: m.subject };
  if (m.reply) meta.reply = m.reply;
  if (m.headers) meta.headers = Object.fromEntries([...m.headers].map(([k, v]) => [k, v.join(', ')]));
  return meta;
}

export default defineSource({
  key: 'nats',
  summary: 'Subscribe to a core NATS subject (wildcards, queue groups); at-most-once, as core NATS is.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-most-once',
    why: 'core NATS neither stores nor redelivers messages: whatever is published while the source is disconnected, reconnecting or paused for backpressure (its subscription dropped) is not delivered to it, and a message in flight when the pipeline fails is not sent again.',
  },
  config,
  lint: lintAuth,
  examples: [
    {
      title: 'All alarms of every site, shared by the workers of the pipeline',
      yaml: "type: nats\nservers: ['nats://nats-1:4222', 'nats://nats-2:4222']\nsubject: 'alarms.>'\nusername: svc\npassword: ${NATS_PASSWORD:-change-me}",
    },
    {
      title: 'Broadcast: every worker gets every message (no queue group)',
      yaml: "type: nats\nsubject: 'pm.*.counters'\nqueue_group: ''\ntoken: ${NATS_TOKEN:-change-me}",
    },
  ],
  async test(c) {
    const nc = await connectNats(c, 'svc connector test');
    try {
      // Subscribing checks the subject and the permission to subscribe (refused asynchronously, before the PONG).
      let refused: Error | undefined;
      const sub = nc.subscribe(c.subject, { queue: c.queue_group || undefined, callback: (err) => void (refused ??= err ?? undefined) });
      await nc.flush();
      sub.unsubscribe();
      if (refused) throw refused;
    } finally {
      await nc.close().catch(() => {});
    }
  },
  create(c, ctx) {
    const queue = c.queue_group ?? ctx.pipeline;
    const last: { meta?: SourceMeta } = {};
    return streamSource<Message>(ctx, {
      type: 'nats',
      reconnect: c,
      acknowledges: false,
      maxBatch: MAX_BATCH,
      highWater: HIGH_WATER,
      async connect({ push, lost, signal }) {
        const nc = await connectNats(c, `svc ${ctx.pipeline} ${ctx.component ?? 'source'}`);
        let sub: Subscription | undefined;
        let refused: Error | undefined;
        let pauses = 0;
        const subscribe = () => {
          sub = nc.subscribe(c.subject, {
            ...(queue ? { queue } : {}),
            callback: (err, m) => {
              // A copy: the client's bytes are a view into its socket buffer, which a queued message must not pin.
              if (!err) return push({ body: Buffer.from(m.data), meta: metaOf(m, last) });
              refused ??= err; // a permission violation closes the subscription
              lost(err);
            },
          });
        };
        try {
          onLost(nc, lost);
          subscribe();
          await nc.flush();
          if (refused) throw refused;
        } catch (e) {
          await nc.close().catch(() => {});
          throw e;
        }
        const session: Session<Message> = {
          pause() {
            if (!sub) return;
            sub.unsubscribe();
            sub = undefined;
            if (signal.aborted) return; // stopping, not behind
            const fields = { connector: 'nats', subject: c.subject, queue_group: queue || null, queued: HIGH_WATER };
            const msg = `nats: the pipeline is ${HIGH_WATER} messages behind; unsubscribed from '${c.subject}' until it catches up (messages published meanwhile are not received: at-most-once)`;
            if (pauses++ === 0) ctx.log.warn(fields, msg);
            else ctx.log.debug(fields, msg);
          },
          resume() {
            if (sub || nc.isClosed()) return;
            try {
              subscribe();
            } catch (e) {
              lost(e as Error);
            }
          },
          async close() {
            await nc.close().catch(() => {});
          },
        };
        return session;
      },
    });
  },
});
