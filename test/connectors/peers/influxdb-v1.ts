// The real InfluxDB peer: Debian's influxd 1.6.7, started by the test with its own config file in a
// temporary directory (meta, data and WAL there; HTTP and the RPC bind-address on free loopback
// ports; reporting, monitoring, continuous queries and subscribers off). It has no /api/v2 and no
// Flux: the sink reaches it with `api: v1` (/write), and the tests read back with InfluxQL (/query).
// With `auth`, an admin user is created first (1.x allows that one request without credentials).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../helpers/net.js';
import type { Peer, PeerFixture } from '../conformance.js';
import { pollingCollector } from './polling.js';
import { peerProcess } from './process.js';
import { pace, until } from '../../helpers/wait.js';

export const ADMIN = { user: 'admin', password: 'admin-secret' };

export interface Influx1 {
  url: string;
  port: number;
  /** `user:password` for the sink's token (the admin's when auth is on). */
  token: string;
  /** An InfluxQL statement (GET /query for SELECT and SHOW, POST otherwise); the JSON answer. */
  query(q: string, db?: string): Promise<{ results: { series?: { name: string; columns: string[]; values: unknown[][] }[]; error?: string }[] }>;
  /** Rows of the first series of a SELECT as objects. */
  rows(q: string, db: string): Promise<Record<string, unknown>[]>;
  /** SIGKILL, `downMs` without a server, then the same ports and data. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const configOf = (dir: string, http: number, rpc: number, auth: boolean) => `reporting-disabled = true
bind-address = "127.0.0.1:${rpc}"
[meta]
  dir = "${dir}/meta"
[data]
  dir = "${dir}/data"
  wal-dir = "${dir}/wal"
  query-log-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:${http}"
  auth-enabled = ${auth}
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[subscriber]
  enabled = false
`;

export async function influx1(opts: { auth?: boolean } = {}): Promise<Influx1> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-influx1-'));
  const [port, rpc] = [await freePort(), await freePort()];
  writeFileSync(join(dir, 'influxdb.conf'), configOf(dir, port, rpc, opts.auth ?? false));
  const proc = peerProcess('influxd', ['-config', join(dir, 'influxdb.conf')], port);
  const url = `http://127.0.0.1:${port}`;
  const authHeader = { authorization: `Basic ${Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString('base64')}` };
  const query: Influx1['query'] = async (q, db) => {
    const read = /^\s*(SELECT|SHOW)\b/i.test(q);
    const params = new URLSearchParams({ q, ...(db ? { db } : {}) });
    const res = await fetch(read ? `${url}/query?${params}` : `${url}/query`, {
      method: read ? 'GET' : 'POST',
      headers: opts.auth ? authHeader : {},
      body: read ? undefined : params,
    });
    return (await res.json()) as Awaited<ReturnType<Influx1['query']>>;
  };
  const ready = async () => {
    await proc.start();
    await until(
      async () =>
        (await fetch(`${url}/ping`).then(
          (r) => r.status,
          () => 0,
        )) === 204,
      15_000,
      'influxd to answer /ping',
      50,
    );
  };
  await ready();
  if (opts.auth) {
    const res = await fetch(`${url}/query`, {
      method: 'POST',
      body: new URLSearchParams({ q: `CREATE USER ${ADMIN.user} WITH PASSWORD '${ADMIN.password}' WITH ALL PRIVILEGES` }),
    });
    if (res.status !== 200) throw new Error(`creating the admin user: ${res.status} ${await res.text()}`);
  }
  return {
    url,
    port,
    token: `${ADMIN.user}:${ADMIN.password}`,
    query,
    async rows(q, db) {
      const r = await query(q, db);
      if (r.results[0]?.error) throw new Error(r.results[0].error);
      const s = r.results[0]?.series?.[0];
      return (s?.values ?? []).map((v) => Object.fromEntries(s!.columns.map((c, i) => [c, v[i]])));
    },
    async restart(downMs = 0) {
      await proc.kill();
      await pace(downMs); // the peer is down this long
      await ready();
    },
    async stop() {
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The sink's conformance against the real 1.6.7 (`api: v1`, /write with basic auth): each test's
 * measurement is its channel, `seq` a tag so points of the same second stay apart; read back with
 * InfluxQL. The server cannot serve the source (no Flux).
 */
export const influxdbV1SinkFixture: PeerFixture = {
  type: 'influxdb',
  label: 'InfluxDB 1.6.7, api v1',
  roles: ['sink'],
  badConfig: { role: 'sink', set: { api: 'v3' }, path: 'api' },
  async start(): Promise<Peer> {
    const peer = await influx1({ auth: true });
    await peer.query('CREATE DATABASE svc');
    return {
      sink: {
        config: (ch) => ({ type: 'influxdb', api: 'v1', url: peer.url, token: peer.token, org: 'unused', bucket: 'svc', measurement: ch, tag_fields: ['seq'] }),
        // While the server restarts, what was read last stays.
        collect: async (ch) =>
          pollingCollector(() => peer.rows(`SELECT * FROM "${ch}"`, 'svc').then((rows) => rows.map((r) => ({ ...r, seq: Number(r.seq) })))),
      },
      wrongPort: (cfg) => ({ ...cfg, url: 'http://127.0.0.1:1' }),
      wrongCredentials: (cfg) => ({ ...cfg, token: 'admin:wrong-password' }),
      disrupt: () => peer.restart(1500),
      stop: () => peer.stop(),
    };
  },
};
