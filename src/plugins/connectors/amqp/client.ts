// What the amqp source and sink share: the broker URL field and the connection (amqplib), named so
// that `rabbitmqctl list_connections client_properties` shows which pipeline holds it.
import { Type } from '@sinclair/typebox';
import type { Channel, ChannelModel } from 'amqplib';
import { once } from '../../connector-runtime/lazy.js';

const amqplib = once(() => import('amqplib'));

export const DEFAULT_URL = 'amqp://localhost:5672';

export const urlField = Type.String({
  minLength: 1,
  default: DEFAULT_URL,
  pattern: '^amqps?://',
  description:
    'Broker URL, amqp:// or amqps:// (user:password@host:port/vhost; guest/guest when no credentials are given). Credentials in it are masked in every message.',
});

/** Seconds before an unanswered connect attempt fails. */
const CONNECT_TIMEOUT_MS = 10_000;

export async function connectBroker(url: string, name: string): Promise<ChannelModel> {
  return (await amqplib()).default.connect(url, { timeout: CONNECT_TIMEOUT_MS, clientProperties: { connection_name: name } });
}

/** Calls `lost` once when the connection closes or fails (amqplib emits `error` then `close`). */
export function onLost(conn: ChannelModel, lost: (err: Error) => void) {
  conn.on('error', () => {}); // the `close` that follows carries the error
  conn.on('close', (err?: Error) => lost(err ?? new Error('connection closed by the broker')));
}

/** The reachability check of source and sink: connect, open a channel, run `op` on it, close. */
export async function checkBroker(url: string, op: (ch: Channel) => Promise<unknown>): Promise<void> {
  const conn = await connectBroker(url, 'svc connector test');
  conn.on('error', () => {}); // a channel error closes the channel, not this check: op's promise rejects
  try {
    const ch = await conn.createChannel();
    ch.on('error', () => {});
    await op(ch);
  } finally {
    await conn.close().catch(() => {});
  }
}
