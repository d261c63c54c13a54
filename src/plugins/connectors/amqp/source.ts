// Source `amqp` (stream): consumes a queue with manual acknowledgement. A unit's messages are
// acknowledged (one multiple-ack up to its last delivery tag) only after they were delivered; the
// broker keeps at most prefetch_count unacknowledged messages in flight, which is the backpressure.
import { Type } from '@sinclair/typebox';
import type { Channel, ConsumeMessage } from 'amqplib';
import { reconnectFields } from '../../connector-runtime/reconnect.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource } from '../../types.js';
import { checkBroker, connectBroker, onLost, urlField } from './client.js';

const config = Type.Object(
  {
    url: urlField,
    queue: Type.String({ minLength: 1, description: 'Queue to consume; declared (asserted) at start with `durable`.' }),
    prefetch_count: Type.Integer({
      minimum: 1,
      maximum: 65535,
      default: 10,
      description: 'Unacknowledged messages the broker sends before waiting for acks; raise it (e.g. 1000) for throughput.',
    }),
    durable: Type.Boolean({ default: true, description: 'Declare the queue durable (survives a broker restart); must match an existing queue.' }),
    auto_ack: Type.Boolean({
      default: false,
      description: 'true: the broker forgets each message as it sends it (at-most-once, faster); false: acknowledged after delivery.',
    }),
    ...reconnectFields(),
  },
  { additionalProperties: false },
);

interface AmqpMessage extends Message {
  raw: ConsumeMessage;
}

export default defineSource({
  key: 'amqp',
  summary: 'Consume an AMQP 0-9-1 queue (RabbitMQ), acknowledging each message after delivery.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-least-once',
    why: 'messages are acknowledged only after every record from them was written or dead-lettered; a lost connection or an undelivered batch returns the unacknowledged messages to the queue, which delivers them again (duplicates possible). With `auto_ack: true` it is at-most-once.',
  },
  config,
  examples: [
    {
      title: 'Alarms from a durable queue, 500 in flight',
      yaml: 'type: amqp\nurl: amqp://svc:${AMQP_PASSWORD:-change-me}@rabbit:5672/telecom\nqueue: alarms\nprefetch_count: 500',
    },
  ],
  async test(c) {
    await checkBroker(c.url, (ch) =>
      ch.checkQueue(c.queue).catch((e: Error) => {
        // A missing queue is declared when the stream starts; anything else is a real problem.
        if (!/NOT_FOUND/.test(e.message)) throw e;
      }),
    );
  },
  create(c, ctx) {
    return streamSource<AmqpMessage>(ctx, {
      type: 'amqp',
      reconnect: c,
      acknowledges: !c.auto_ack,
      // Half the window per unit: the broker sends the next half while the first is written and flushed.
      maxBatch: c.auto_ack ? 1000 : Math.ceil(c.prefetch_count / 2),
      highWater: c.auto_ack ? 2000 : c.prefetch_count,
      async connect({ push, lost }) {
        const conn = await connectBroker(c.url, `svc ${ctx.pipeline} ${ctx.component ?? 'source'}`);
        try {
          onLost(conn, lost);
          const ch: Channel = await conn.createChannel();
          ch.on('error', () => {}); // a channel error closes the connection's use here: reported by `close`
          ch.on('close', () => lost(new Error(`channel on queue '${c.queue}' closed`)));
          await ch.assertQueue(c.queue, { durable: c.durable });
          await ch.prefetch(c.prefetch_count);
          const consume = () =>
            ch.consume(
              c.queue,
              (m) => {
                if (m === null) return lost(new Error(`queue '${c.queue}' was deleted or the consumer cancelled by the broker`));
                push({ body: m.content, meta: { queue: c.queue, routing_key: m.fields.routingKey, exchange: m.fields.exchange }, raw: m });
              },
              { noAck: c.auto_ack },
            );
          let tag: string | undefined = (await consume()).consumerTag;
          const session: Session<AmqpMessage> = {
            // With manual acks prefetch_count already bounds the flow; auto_ack needs the consumer cancelled.
            pause() {
              if (!c.auto_ack || !tag) return;
              const t = tag;
              tag = undefined;
              ch.cancel(t).catch((e: Error) => lost(e));
            },
            resume() {
              if (!c.auto_ack || tag) return;
              consume().then(
                (r) => (tag = r.consumerTag),
                (e: Error) => lost(e),
              );
            },
            async ack(batch) {
              ch.ack(batch.at(-1)!.raw, true);
            },
            async close() {
              await conn.close().catch(() => {});
            },
          };
          return session;
        } catch (e) {
          await conn.close().catch(() => {});
          throw e;
        }
      },
    });
  },
});
