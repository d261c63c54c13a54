// Importing the registry (every CLI command, the daemon, each worker thread does) must not load a
// connector SDK: those load when a connector connects (src/plugins/connector-runtime/lazy.ts). A child process
// imports the registry with a module-resolution hook that logs every resolved URL; the test names
// any SDK package among them.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';

const root = join(import.meta.dirname, '..', '..');

/** Connector SDKs (and the libraries they are built on) that only a connecting connector may load. */
const HEAVY = [
  '@aws-sdk/client-s3',
  '@aws-sdk/lib-storage',
  '@google-cloud/storage',
  '@azure/storage-blob',
  '@elastic/elasticsearch',
  '@opensearch-project/opensearch',
  '@clickhouse/client',
  '@influxdata/influxdb-client',
  'ssh2-sftp-client',
  'ssh2',
  'basic-ftp',
  'kafkajs',
  'ioredis',
  'amqplib',
  'mqtt',
  'mqtt-packet',
  '@nats-io/transport-node',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  'ws',
  'undici',
];

/**
 * The sql connector's drivers. NOT CHECKED YET: src/plugins/connectors/sql/ is being changed
 * elsewhere; move these into HEAVY once its drivers load lazily.
 */
const SQL_DRIVERS = ['pg', 'pg-cursor', 'pg-copy-streams', 'mysql2', 'better-sqlite3'];

/** RSS the registry import may add to a fresh process (tsx's own cost excluded). With every SDK loaded it added ~125 MB; without, ~55 MB. */
const MAX_RSS_GROWTH_MB = 100;

/** Logs each resolved URL to the file given at registration (sync, so the log is complete when the import resolves). */
const HOOK = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(log, r.url + '\\n');
  return r;
}`;

const child = (log: string) => `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOK)}), { data: { log: ${JSON.stringify(log)} } });
const rss0 = process.memoryUsage().rss;
const t0 = performance.now();
await import(${JSON.stringify(join(root, 'src', 'plugins', 'registry.ts'))});
const ms = Math.round(performance.now() - t0);
console.log(JSON.stringify({ ms, growthMB: Math.round((process.memoryUsage().rss - rss0) / 1048576) }));
`;

/** The package a node_modules URL belongs to (the innermost node_modules). */
function packageOf(url: string): string | undefined {
  const at = url.lastIndexOf('/node_modules/');
  if (at < 0) return undefined;
  const m = /^(@[^/]+\/[^/]+|[^/]+)/.exec(url.slice(at + '/node_modules/'.length));
  return m ? decodeURIComponent(m[1]!) : undefined;
}

describe('importing the plugin registry', () => {
  it('loads no connector SDK, and stays small', async () => {
    const log = join(tempDir(), 'resolved.txt');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', child(log)], { cwd: root, timeout: 60_000 });
    const result = JSON.parse(stdout.trim().split('\n').pop()!) as { ms: number; growthMB: number };
    const packages = new Set(readFileSync(log, 'utf8').split('\n').map(packageOf).filter((p) => p !== undefined));
    // The hook saw the registry's own dependencies: an empty log would pass for the wrong reason.
    expect(packages.has('@sinclair/typebox')).toBe(true);
    expect(HEAVY.filter((p) => packages.has(p)), 'SDKs loaded by importing the registry: import them where the connector connects').toEqual([]);
    const sql = SQL_DRIVERS.filter((p) => packages.has(p));
    if (sql.length) console.log(`[lazy-sdks] not checked yet, loaded eagerly: ${sql.join(', ')}`);
    console.log(`[lazy-sdks] registry import: ${result.ms} ms, RSS +${result.growthMB} MB`);
    expect(result.growthMB).toBeLessThan(MAX_RSS_GROWTH_MB);
  }, 90_000);
});
