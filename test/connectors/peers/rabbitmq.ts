// Peer fixture for the amqp connector: the RabbitMQ broker that runs on every machine
// (127.0.0.1:5672). Each test file gets its own vhost and a user for the connectors under test, so
// `rabbitmqctl close_all_user_connections` cuts exactly their connections (the disruption) while
// the fixture's own connection (guest) stays, and the wrong-credentials case has a real password.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';

const run = promisify(execFile);
const ctl = (...args: string[]) => run('rabbitmqctl', ['--quiet', ...args], { timeout: 60_000 });

/** A vhost of this test file's own: `url` for connectors, `admin` (guest) for the test itself. */
export async function rabbitVhost() {
  const vhost = `svc_conf_${process.pid}_${Date.now().toString(36)}`;
  const user = vhost;
  const password = 'right-secret';
  await ctl('add_vhost', vhost);
  await ctl('add_user', user, password);
  await ctl('set_permissions', '-p', vhost, user, '.*', '.*', '.*');
  await ctl('set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*');
  const admin = await amqp.connect(`amqp://guest:guest@127.0.0.1:5672/${vhost}`);
  return {
    vhost,
    user,
    password,
    url: `amqp://${user}:${password}@127.0.0.1:5672/${vhost}`,
    admin,
    /** Cuts every connection of the connectors' user (the broker closes them with 320 CONNECTION_FORCED). */
    cut: () => ctl('close_all_user_connections', user, 'svc test: connection dropped on purpose'),
    async stop() {
      await admin.close().catch(() => {});
      await ctl('delete_vhost', vhost).catch(() => {});
      await ctl('delete_user', user).catch(() => {});
    },
  };
}

export const rabbitmq: PeerFixture = {
  type: 'amqp',
  badConfig: { role: 'sink', set: { delivery_mode: 3 }, path: 'delivery_mode' },
  async start(): Promise<Peer> {
    const v = await rabbitVhost();
    const { admin, url, user, password, vhost } = v;
    return {
      source: {
        config: (queue) => ({ type: 'amqp', url, queue, prefetch_count: 200 }),
        async prepare(queue) {
          const ch = await admin.createChannel();
          await ch.assertQueue(queue, { durable: true });
          await ch.close();
        },
        async publish(queue, bodies) {
          const pub = await admin.createConfirmChannel();
          for (const b of bodies) pub.sendToQueue(queue, b, { persistent: true });
          await pub.waitForConfirms();
          await pub.close();
        },
      },
      sink: {
        config: (queue) => ({ type: 'amqp', url, routing_key: queue }),
        async collect(queue): Promise<Collector> {
          const c = await admin.createChannel();
          await c.assertQueue(queue, { durable: true });
          const got: Rec[] = [];
          await c.consume(queue, (m) => m && got.push(JSON.parse(m.content.toString()) as Rec), { noAck: true });
          return { records: () => got, close: () => c.close().catch(() => {}) };
        },
      },
      wrongPort: (cfg) => ({ ...cfg, url: `amqp://${user}:${password}@127.0.0.1:1/${vhost}` }),
      wrongCredentials: (cfg) => ({ ...cfg, url: `amqp://${user}:wrong-secret@127.0.0.1:5672/${vhost}` }),
      disrupt: async () => void (await v.cut()),
      stop: () => v.stop(),
    };
  },
};
