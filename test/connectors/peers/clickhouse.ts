// Peer fixture for the clickhouse connector: a private Debian `clickhouse-server` (18.16) started by
// the test with its own config.xml and users.xml in a temporary directory: HTTP and native TCP on
// free loopback ports, data, tmp and user files in that directory, the log in a file there. Users:
// `default` without a password and `svc` with one (the wrong-credentials case). restart() kills it
// by PID and starts it again on the same ports and data, so acknowledged inserts survive it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, ClickHouseLogLevel, type ClickHouseClient } from '@clickhouse/client';
import { freePort } from '../../helpers/net.js';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { pollingCollector } from './polling.js';
import { peerProcess } from './process.js';
import { pace, until } from '../../helpers/wait.js';

export const SERVER_BINARY = '/usr/sbin/clickhouse-server';
export const SVC_PASSWORD = 'right-secret';

export interface ClickhouseServer {
  host: string;
  httpPort: number;
  tcpPort: number;
  /** A client of the fixture's own (user default). */
  admin: ClickHouseClient;
  /** Runs a statement. */
  exec(sql: string): Promise<void>;
  /** Rows of a SELECT as objects. */
  rows<T = Rec>(sql: string): Promise<T[]>;
  pid(): number;
  /** SIGKILL, `downMs` without a server, then the same ports and data; resolves once it answers queries. */
  restart(downMs?: number): Promise<void>;
  /** The server's log (error lines), for failure messages. */
  log(): string;
  stop(): Promise<void>;
}

const configXml = (dir: string, http: number, tcp: number) => `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/server.err.log</errorlog><console>0</console></logger>
  <http_port>${http}</http_port>
  <tcp_port>${tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>${dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
</yandex>
`;

const usersXml = `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>1000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
    <svc><password>${SVC_PASSWORD}</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></svc>
  </users>
  <quotas><default></default></quotas>
</yandex>
`;

export async function clickhouseServer(): Promise<ClickhouseServer> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-clickhouse-'));
  const [httpPort, tcpPort] = [await freePort(), await freePort()];
  for (const d of ['data', 'tmp', 'user_files', 'format_schemas']) mkdirSync(join(dir, d));
  writeFileSync(join(dir, 'config.xml'), configXml(dir, httpPort, tcpPort));
  writeFileSync(join(dir, 'users.xml'), usersXml);
  const proc = peerProcess(SERVER_BINARY, [`--config-file=${join(dir, 'config.xml')}`], httpPort);
  const admin = createClient({ url: `http://127.0.0.1:${httpPort}`, log: { level: ClickHouseLogLevel.OFF }, keep_alive: { enabled: false } });
  const ready = async () => {
    await proc.start();
    // The port opens before the server answers queries: wait for one.
    let failed: unknown;
    const answers = () =>
      admin
        .query({ query: 'SELECT 1', format: 'JSONEachRow' })
        .then((r) => r.text())
        .then(
          () => true,
          (e: unknown) => ((failed = e), false),
        );
    await until(answers, 15_000, 'clickhouse to answer a query', 50).catch((e: unknown) => {
      throw failed ?? e;
    });
  };
  await ready();
  const log = () => {
    try {
      return readFileSync(join(dir, 'server.err.log'), 'utf8').slice(-3000);
    } catch {
      return '';
    }
  };
  return {
    host: '127.0.0.1',
    httpPort,
    tcpPort,
    admin,
    async exec(sql) {
      await admin.command({ query: sql });
    },
    async rows<T>(sql: string) {
      return (await admin.query({ query: sql, format: 'JSONEachRow' })).json<T>();
    },
    pid: proc.pid,
    async restart(downMs = 0) {
      await proc.kill();
      await pace(downMs); // the peer is down this long
      await ready();
    },
    log,
    async stop() {
      await admin.close().catch(() => {});
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Tables of the conformance run: one for the source, one for the sink, a channel column each. */
const SOURCE_TABLE = 'svc_conformance_source';
const SINK_TABLE = 'svc_conformance_sink';

/** Reads a channel's rows every 100 ms until closed (records() answers at once). */
function poll(server: ClickhouseServer, channel: string): Collector {
  return pollingCollector(() => server.rows(`SELECT seq, pad FROM ${SINK_TABLE} WHERE channel = '${channel}'`));
}

export const clickhouseFixture: PeerFixture = {
  type: 'clickhouse',
  badConfig: { role: 'sink', set: { secure: 'yes' }, path: 'secure' },
  async start(): Promise<Peer> {
    const server = await clickhouseServer();
    await server.exec(`CREATE TABLE ${SOURCE_TABLE} (channel String, seq UInt32, pad String) ENGINE = MergeTree ORDER BY (channel, seq)`);
    await server.exec(`CREATE TABLE ${SINK_TABLE} (channel String, seq UInt32, pad String) ENGINE = MergeTree ORDER BY (channel, seq)`);
    const base = { type: 'clickhouse', host: server.host, port: server.httpPort };
    return {
      source: {
        // A bound parameter: this 18.16 server refuses query parameters, so the inlined fallback runs.
        config: (ch) => ({ ...base, query: `SELECT seq, pad FROM ${SOURCE_TABLE} WHERE channel = {channel:String} ORDER BY seq`, params: { channel: ch } }),
        async publish(ch, bodies) {
          const values = bodies.map((b) => ({ channel: ch, ...(JSON.parse(b.toString()) as Rec) }));
          await server.admin.insert({ table: SOURCE_TABLE, values, format: 'JSONEachRow' });
        },
      },
      sink: {
        config: (ch) => ({ ...base, table: SINK_TABLE, transforms: [{ type: 'add_field', fields: { channel: `'${ch}'` } }] }),
        collect: async (ch) => poll(server, ch),
      },
      wrongPort: (cfg) => ({ ...cfg, port: 1 }),
      wrongCredentials: (cfg) => ({ ...cfg, username: 'svc', password: 'wrong-secret' }),
      // Down for a while: HTTP clients reconnect between requests, so a restart only shows when a write meets it.
      disrupt: () => server.restart(1500),
      stop: () => server.stop(),
    };
  },
};
