// Sink `amqp`: publishes each record as one message on a confirm channel and waits for the
// broker's confirms before the write counts (at-least-once). The runtime retries a failed write;
// the connection is opened again on the next attempt.
import { Type } from '@sinclair/typebox';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { defineSink } from '../../types.js';
import { checkBroker, connectBroker, onLost, urlField } from './client.js';

const config = Type.Object(
  {
    url: urlField,
    exchange: Type.String({ default: '', description: "Exchange to publish to; '' is the default exchange, which routes by queue name." }),
    routing_key: Type.String({ minLength: 1, description: 'Routing key of every message (the queue name with the default exchange).' }),
    delivery_mode: Type.Union([Type.Literal(1), Type.Literal(2)], {
      default: 2,
      description: '1 transient, 2 persistent (written to disk by durable queues).',
    }),
  },
  { additionalProperties: false },
);

interface Link {
  conn: ChannelModel;
  ch: ConfirmChannel;
  /** Why the broker closed the channel (a missing exchange: 404 NOT_FOUND); pending confirms only say "closed". */
  failure?: Error;
  /** Messages the broker returned as unroutable (mandatory) since the batch began. */
  returned: number;
}

export default defineSink({
  key: 'amqp',
  summary: 'Publish each record as an AMQP 0-9-1 message (RabbitMQ) with publisher confirms.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a batch counts as written only once the broker confirmed every message; an unconfirmed batch is retried whole, so a broker failure mid-batch can publish some messages twice.',
  },
  config,
  examples: [
    {
      title: 'Persistent messages to a topic exchange',
      yaml: 'type: amqp\nurl: amqp://svc:${AMQP_PASSWORD:-change-me}@rabbit:5672/telecom\nexchange: pm\nrouting_key: pm.5g.du\ndelivery_mode: 2',
    },
  ],
  async test(c) {
    await checkBroker(c.url, async (ch) => {
      if (c.exchange) await ch.checkExchange(c.exchange);
    });
  },
  create(c, ctx) {
    const conn = new Connection<Link>(
      ctx,
      'amqp',
      async (lost) => {
        const conn = await connectBroker(c.url, `svc ${ctx.pipeline} ${ctx.component ?? 'sink'}`);
        try {
          onLost(conn, lost);
          const ch = await conn.createConfirmChannel();
          const link: Link = { conn, ch, returned: 0 };
          ch.on('error', (e: Error) => (link.failure = e));
          // basic.return comes before the confirm of the same message, so a batch sees its own returns.
          ch.on('return', () => link.returned++);
          ch.on('close', () => lost(link.failure ?? new Error('channel closed by the broker')));
          return link;
        } catch (e) {
          await conn.close().catch(() => {});
          throw e;
        }
      },
      async ({ conn }) => conn.close().catch(() => {}),
    );
    // mandatory: a message no queue receives is returned instead of dropped in silence.
    const options = { deliveryMode: c.delivery_mode, mandatory: true };
    return {
      async write(batch) {
        const bytes = await conn.use(
          async (l) => {
            l.returned = 0;
            let sent = 0;
            try {
              for (const r of batch.records!) {
                const value = ctx.encoder.one(r);
                sent += value.length;
                // false: the socket buffer is full; wait for it to drain (backpressure) before going on.
                if (!l.ch.publish(c.exchange, c.routing_key, value, options)) await new Promise((res) => l.ch.once('drain', res));
              }
              await l.ch.waitForConfirms();
            } catch (e) {
              throw l.failure ?? e;
            }
            if (l.returned > 0) {
              const where = c.exchange ? `exchange '${c.exchange}'` : 'the default exchange';
              throw new WriteError(
                `${l.returned} of ${batch.count} messages unroutable: no queue is bound to ${where} for routing key '${c.routing_key}' (declare or bind one)`,
                true,
              );
            }
            return sent;
          },
          (e) => !(e instanceof WriteError),
        ); // unroutable is not a broken connection
        return { bytes };
      },
      close: () => conn.end(),
    };
  },
});
