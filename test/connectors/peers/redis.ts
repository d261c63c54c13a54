// Peer fixtures for the redis connector, one per mode:
// - list: a private `redis-server` (AOF with fsync always, in a temporary directory) on a free
//   loopback port, so disrupt() is a real restart (SIGKILL, then the same port and data directory):
//   what Redis acknowledged survives it, as the loss-free cases need.
// - stream: the shared Redis at 127.0.0.1:6379 with unique keys (deleted in stop()); disrupt() kills
//   the connections of the connectors under test (CLIENT KILL by their connection names).
// Both use a second private instance with requirepass for the wrong-credentials case.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../helpers/daemon.js';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { pollingCollector } from './polling.js';
import { peerProcess } from './process.js';

export const SHARED = { host: '127.0.0.1', port: 6379 };

export interface RedisServer {
  host: string;
  port: number;
  pid(): number;
  /** SIGKILL, then the same port (and data directory); resolves once it accepts connections. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A private redis-server on a free loopback port. `persistent`: AOF with fsync always in a private
 * directory (survives restart()); otherwise nothing is saved. `args` adds options (--requirepass).
 */
export async function redisServer(opts: { persistent?: boolean; args?: string[] } = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    ...(opts.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    ...(opts.args ?? []),
  ];
  const proc = peerProcess('redis-server', args, port);
  const { start, kill } = proc;
  await start();
  return {
    host: '127.0.0.1',
    port,
    pid: proc.pid,
    async restart() {
      await kill();
      await start();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A plain client for the fixture's own reads and writes. */
export const admin = (server: { host: string; port: number; password?: string; db?: number }) =>
  new Redis({ host: server.host, port: server.port, password: server.password, db: server.db ?? 0, lazyConnect: false, maxRetriesPerRequest: 1 });

/** Puts `bodies` into `key`: RPUSH for a list, XADD (field `data`) for a stream. */
export async function put(r: Redis, key: string, mode: 'list' | 'stream', bodies: Buffer[]) {
  const p = r.pipeline();
  for (let i = 0; i < bodies.length; i += 1000) {
    const part = bodies.slice(i, i + 1000);
    if (mode === 'list') p.rpush(key, ...part);
    else for (const b of part) p.xadd(key, '*', 'data', b);
  }
  await p.exec();
}

/** What `key` holds, as records (JSON elements or `data` fields). */
export async function contents(r: Redis, key: string, mode: 'list' | 'stream'): Promise<Rec[]> {
  if (mode === 'list') return (await r.lrange(key, 0, -1)).map((s) => JSON.parse(s) as Rec);
  return (await r.xrange(key, '-', '+')).map(([, f]) => JSON.parse(f[f.indexOf('data') + 1]!) as Rec);
}

/** Reads `key` every 50 ms until closed (records() must answer at once); deletes it on close. */
async function poll(r: Redis, key: string, mode: 'list' | 'stream'): Promise<Collector> {
  return pollingCollector(() => contents(r, key, mode), { everyMs: 50, onClose: () => r.del(key).catch(() => {}) });
}

/** Deletes every key of this test process (`svc_redis_<pid>_*`: the data, processing lists, stored IDs). */
async function deleteOurKeys(r: Redis) {
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `svc_redis_${process.pid}_*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await r.del(...keys);
  } while (cursor !== '0');
}

function fixture(mode: 'list' | 'stream'): PeerFixture {
  return {
    type: 'redis',
    badConfig: { role: 'source', set: { mode: 'queue' }, path: 'mode' },
    async start(): Promise<Peer> {
      const secured = await redisServer({ args: ['--requirepass', 'right-secret'] });
      const main = mode === 'list' ? await redisServer({ persistent: true }) : undefined;
      const server = main ?? SHARED;
      const r = admin(server);
      const base = { type: 'redis', host: server.host, port: server.port, mode };
      return {
        source: {
          config: (key) => ({ ...base, key, block_ms: 200 }),
          publish: (key, bodies) => put(r, key, mode, bodies),
        },
        sink: {
          config: (key) => ({ ...base, key }),
          collect: (key) => poll(r, key, mode),
        },
        wrongPort: (cfg) => ({ ...cfg, port: 1 }),
        wrongCredentials: (cfg) => ({ ...cfg, host: secured.host, port: secured.port, password: 'wrong-secret' }),
        async disrupt() {
          if (main) return main.restart();
          // The connections of the conformance's disruption pipelines, by their names (`svc <pipeline> <component>`).
          const list = (await r.client('LIST')) as string;
          const ids = [...list.matchAll(/^id=(\d+) .*?name=(svc_conf-(?:sink-)?restart-redis\S*)/gm)].map((m) => m[1]!);
          for (const id of ids) await r.client('KILL', 'ID', id).catch(() => {});
          if (ids.length === 0) throw new Error('no connection of the connector under test to kill');
        },
        async stop() {
          await deleteOurKeys(r).catch(() => {});
          r.disconnect();
          await main?.stop();
          await secured.stop();
        },
      };
    },
  };
}

export const redisList = fixture('list');
export const redisStream = fixture('stream');
