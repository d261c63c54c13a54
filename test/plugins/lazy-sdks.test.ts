// Importing the registry (every CLI command, the daemon, each worker thread does) must not load a
// connector SDK or database driver: those load when a connector connects
// (src/plugins/connector-runtime/lazy.ts). A child process imports the registry with a
// module-resolution hook that logs every resolved URL; the test names any heavy package among them
// (HEAVY: every dependency but a short allow-list of light ones).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';

const root = join(import.meta.dirname, '..', '..');

/**
 * The heavy packages are DERIVED: every dependency in package.json except this allow-list of light
 * ones that importing the registry may load (the serializers' format libraries, schemas, logging).
 * Derived this way rather than from the `lazyModule(() => import('x'))` calls in src/ because a
 * new dependency is then checked by default (a new connector SDK imported eagerly fails this test
 * without anyone adding it to a list), and because packages loaded through a lazily imported module
 * of our own (the sql drivers: `import('./postgres.js')`, which imports pg) are no bare `import()`
 * call to find. Adding a light library the registry may load means adding it here, on purpose.
 */
const LIGHT = [
  '@sinclair/typebox',
  '@jmespath-community/jmespath',
  'avsc',
  'csv-parse',
  'csv-stringify',
  'fastest-levenshtein',
  'hyparquet',
  'hyparquet-compressors',
  'hyparquet-writer',
  'msgpackr',
  'picomatch',
  'pino',
  'protobufjs',
  'saxes',
  'snappyjs',
  'yaml',
];

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};
// Optional dependencies (kafka's native client) are SDKs too, loaded only when used.
const dependencies = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.optionalDependencies ?? {})];
/** Connector SDKs, database drivers, the daemon's server and store: what importing the registry must not load. */
const HEAVY = dependencies.filter((d) => !LIGHT.includes(d));

/** Every `import('package')` (bare specifier) under src/: the SDKs the code loads on first use. */
function lazyImports(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return lazyImports(path);
    if (!e.name.endsWith('.ts')) return [];
    const code = readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => !/^\s*(\/\/|\/\*|\*)/.test(l)) // not the examples in comments
      .join('\n');
    return [...code.matchAll(/\bimport\(\s*'([^'.][^']*)'\s*\)/g)].map((m) => m[1]!).filter((s) => !s.startsWith('node:'));
  });
}

/**
 * Heap the registry import may add to a fresh process, both measured after full garbage collections
 * (tsx's own cost excluded): 21.8 MB in three runs here, 43.9 MB with eight of the SDKs loaded as
 * well. RSS was the measure before: it moved with the machine's load (a bound of 100 MB failed at
 * 114 once), since it counts what the collector has not yet returned; the collected heap does not.
 */
const MAX_HEAP_GROWTH_MB = 32;

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
const heapAfterGc = () => (globalThis.gc(), globalThis.gc(), process.memoryUsage().heapUsed);
const heap0 = heapAfterGc();
const rss0 = process.memoryUsage().rss;
const t0 = performance.now();
await import(${JSON.stringify(join(root, 'src', 'plugins', 'registry.ts'))});
const ms = Math.round(performance.now() - t0);
const rssMB = Math.round((process.memoryUsage().rss - rss0) / 1048576);
console.log(JSON.stringify({ ms, rssMB, heapMB: Math.round((heapAfterGc() - heap0) / 1048576) }));
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
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', child(log)], {
      cwd: root,
      timeout: 60_000,
    });
    const result = JSON.parse(stdout.trim().split('\n').pop()!) as { ms: number; rssMB: number; heapMB: number };
    const packages = new Set(
      readFileSync(log, 'utf8')
        .split('\n')
        .map(packageOf)
        .filter((p) => p !== undefined),
    );
    // The hook saw the registry's own dependencies: an empty log would pass for the wrong reason.
    expect(packages.has('@sinclair/typebox')).toBe(true);
    expect(
      HEAVY.filter((p) => packages.has(p)),
      'SDKs loaded by importing the registry: import them where the connector connects',
    ).toEqual([]);
    console.log(`[lazy-sdks] registry import: ${result.ms} ms, heap after GC +${result.heapMB} MB, RSS +${result.rssMB} MB`);
    expect(result.heapMB).toBeLessThan(MAX_HEAP_GROWTH_MB);
  }, 90_000);
});

describe('the list of heavy packages', () => {
  it('is every dependency but the light ones: SDKs, the sql drivers and every package src/ imports lazily', () => {
    expect(
      LIGHT.filter((p) => !dependencies.includes(p)),
      'light packages that are no dependency (remove them)',
    ).toEqual([]);
    const lazy = [...new Set(lazyImports(join(root, 'src')))];
    expect(
      lazy.filter((p) => !HEAVY.includes(p)),
      'imported lazily, so not light',
    ).toEqual([]);
    expect(HEAVY).toEqual(
      expect.arrayContaining([
        'pg',
        'pg-cursor',
        'pg-copy-streams',
        'mysql2',
        'better-sqlite3',
        'kafkajs',
        '@confluentinc/kafka-javascript',
        'ssh2-sftp-client',
      ]),
    );
  });
});
