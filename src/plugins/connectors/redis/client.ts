// What the redis source and sink share: the server fields and the connection (ioredis 6.0.0) with
// its own reconnect off (the runtime reconnects with its backoff and counts each state change),
// nothing queued while disconnected, RESP2, and the database selected explicitly so that a wrong
// `db` fails the connect instead of writing into database 0.
import { Type } from '@sinclair/typebox';
import type { Redis, RedisOptions } from 'ioredis';
import { errorMessage } from '../../../core/errors.js';
import { secret } from '../../../core/secrets.js';
import { once } from '../../connector-runtime/lazy.js';

const ioredis = once(() => import('ioredis'));

/** Seconds before an unanswered connect attempt fails. */
const CONNECT_TIMEOUT_MS = 10_000;

export const serverFields = {
  host: Type.String({ minLength: 1, default: 'localhost', description: 'Redis host.' }),
  port: Type.Integer({ minimum: 1, maximum: 65535, default: 6379, description: 'Redis port.' }),
  password: secret('Password (AUTH, or the `default` user of Redis 6 ACLs).'),
  db: Type.Integer({ minimum: 0, default: 0, description: 'Database number (SELECT).' }),
};

export interface RedisServer {
  host: string;
  port: number;
  password?: string;
  db: number;
}

/**
 * Connects and selects the database; the error of a failed attempt is the server's or the socket's
 * (ioredis itself only says "Connection is closed."). `lost` is called once when the connection ends.
 */
export async function connectRedis(c: RedisServer, name: string, lost?: (err: Error) => void, scripts?: RedisOptions['scripts']): Promise<Redis> {
  const { Redis } = await ioredis();
  let last: Error | undefined;
  const r = new Redis({
    scripts,
    host: c.host,
    port: c.port ?? 6379,
    password: c.password,
    connectionName: name.replace(/\s+/g, '_'),
    lazyConnect: true,
    retryStrategy: () => null, // the runtime reconnects
    maxRetriesPerRequest: 0, // no reconnect, so nothing to retry on: a command fails with its connection
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    connectTimeout: CONNECT_TIMEOUT_MS,
    protocol: 2,
  });
  r.on('error', (e: Error) => void (last = e));
  let ready = false;
  r.on('close', () => {
    if (ready) lost?.(new Error(last ? errorMessage(last) : 'connection closed by the server'));
  });
  try {
    await r.connect();
    if (c.db) await r.select(c.db);
  } catch (e) {
    r.disconnect();
    throw last && /closed/i.test(errorMessage(e)) ? last : e;
  }
  ready = true;
  return r;
}

/** Fails with a clear message when `key` exists with another type than `mode` needs. */
export async function checkKeyType(r: Redis, key: string, mode: 'list' | 'stream') {
  const t = await r.type(key);
  if (t !== 'none' && t !== mode) throw new Error(`key '${key}' holds a ${t}, not a ${mode} (mode: ${mode})`);
}

/** The reachability check of source and sink: connect (auth, db), then the key's type. */
export async function checkRedis(c: RedisServer & { key: string; mode: 'list' | 'stream' }) {
  const r = await connectRedis(c, 'svc connector test');
  try {
    await checkKeyType(r, c.key, c.mode);
  } finally {
    r.disconnect();
  }
}

/** True for a reply error (the server answered): the connection itself is fine. */
export const isReplyError = (e: unknown) => e instanceof Error && e.name === 'ReplyError';
