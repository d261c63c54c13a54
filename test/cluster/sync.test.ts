// A worker's sync of schemas and MIBs from the manager (spec doc 2 section 4), against a real
// daemon's /api/schemas and /api/mibs on loopback: byte-identical copies, only changes fetched,
// atomic switches, the earlier copy when the manager is down, the API key.
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { join, relative } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { readSyncedMibs, syncFromManager } from '../../src/cluster/sync.js';
import { MibIndex } from '../../src/mib/index.js';
import type { Logger } from '../../src/observability/log.js';
import { readSchemaFile } from '../../src/plugins/common/schema-file.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { ACME } from '../mib/helpers.js';

const AVSC = '{"type":"record","name":"Counter","fields":[{"name":"value","type":"long"}]}';
const PROTO = 'syntax = "proto3";\nmessage Pm { string ne = 1; int64 value = 2; }\n';
/** Not UTF-8: served as application/octet-stream, must arrive unchanged. */
const BINARY = Buffer.from([0x30, 0x82, 0xff, 0xfe, 0x00, 0x01, 0x80, 0x81, 0x0a, 0x0d]);

function logged() {
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) }) as unknown as Logger;
  return { log, warnings: () => lines.filter((l) => l.level === 40) };
}

async function manager(env: Record<string, string> = {}) {
  const schemaDir = join(tempDir('svc-mgr-schemas-'), 'schemas');
  const d = await testDaemon({ SVC_SCHEMA_DIR: schemaDir, ...env });
  return { d, schemaDir, key: env.SVC_API_KEY };
}

async function uploadSchema(m: { d: TestDaemon; key?: string | undefined }, name: string, content: string | Buffer, subdir?: string) {
  const form = new FormData();
  form.append('file', new Blob([content]), name);
  if (subdir) form.append('subdir', subdir);
  const res = await fetch(`${m.d.url}/api/schemas/upload`, { method: 'POST', body: form, headers: m.key ? { 'x-api-key': m.key } : {} });
  expect(res.status, await res.clone().text()).toBe(201);
}

async function uploadMib(m: { d: TestDaemon; key?: string | undefined }, name: string, text: string) {
  const form = new FormData();
  form.append('file', new Blob([text]), name);
  const res = await fetch(`${m.d.url}/api/mibs/upload`, { method: 'POST', body: form, headers: m.key ? { 'x-api-key': m.key } : {} });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { compiled: string[] }).compiled.length).toBeGreaterThan(0);
}

/** Every file under `dir` (following the sync's links), relative, sorted. */
function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const full = join(d, e);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(relative(dir, full));
    }
  };
  walk(dir);
  return out.sort();
}

/** The manager's compiled modules as GET /api/mibs/{name} serves them, by file name. */
async function managerMibs(m: { d: TestDaemon; key?: string | undefined }): Promise<Map<string, Buffer>> {
  const headers: Record<string, string> = m.key ? { 'x-api-key': m.key } : {};
  const list = (await (await fetch(`${m.d.url}/api/mibs`, { headers })).json()) as { name: string }[];
  const out = new Map<string, Buffer>();
  for (const { name } of list) out.set(`${name}.json`, Buffer.from(await (await fetch(`${m.d.url}/api/mibs/${name}`, { headers })).arrayBuffer()));
  return out;
}

const current = (dataDir: string) => readlinkSync(join(dataDir, 'sync', 'current'));

describe('syncFromManager', () => {
  it('copies every schema file and compiled MIB module byte for byte; a second sync changes nothing', async () => {
    const m = await manager();
    await uploadSchema(m, 'counter.avsc', AVSC);
    await uploadSchema(m, 'pm.proto', PROTO, 'vendor/nokia');
    await uploadSchema(m, 'module.asn1', BINARY, 'asn');
    await uploadMib(m, 'ACME-MIB.mib', ACME);
    const dataDir = tempDir('svc-worker-data-');
    const { log } = logged();

    const r = await syncFromManager({ managerUrl: m.d.url, dataDir, log });
    const mibs = await managerMibs(m);
    expect(mibs.has('ACME-MIB.json')).toBe(true);
    expect(r).toEqual({ schemaDir: join(dataDir, 'schemas'), mibDir: join(dataDir, 'mibs'), changed: 3 + mibs.size, fromCache: false });

    expect(files(r.schemaDir)).toEqual(['asn/module.asn1', 'counter.avsc', 'vendor/nokia/pm.proto']);
    for (const f of files(r.schemaDir)) expect(readFileSync(join(r.schemaDir, f)).equals(readFileSync(join(m.schemaDir, f))), f).toBe(true);
    expect(readFileSync(join(r.schemaDir, 'asn/module.asn1')).equals(BINARY)).toBe(true);
    expect(files(r.mibDir)).toEqual([...mibs.keys()].sort());
    for (const [f, bytes] of mibs) expect(readFileSync(join(r.mibDir, f)).equals(bytes), f).toBe(true);
    // The manager's own persisted copy is the same JSON.
    expect(readFileSync(join(r.mibDir, 'ACME-MIB.json')).equals(readFileSync(join(m.d.dir, 'mibs', 'ACME-MIB.json')))).toBe(true);

    // Where a run looks: serializers take relative schema_file paths under SVC_SCHEMA_DIR; the
    // synced modules load into a MIB index.
    expect(readSchemaFile('vendor/nokia/pm.proto', r.schemaDir)).toBe(PROTO);
    const ix = new MibIndex(await readSyncedMibs(r.mibDir));
    expect(ix.toNumeric('ACME-MIB::acmeTemp')?.oid).toBe('1.3.6.1.4.1.99999.1');

    const version = current(dataDir);
    // Two runs starting together: both syncs succeed, one after the other, and nothing changed.
    const again = await Promise.all([syncFromManager({ managerUrl: m.d.url, dataDir, log }), syncFromManager({ managerUrl: m.d.url, dataDir, log })]);
    expect(again.map((x) => [x.changed, x.fromCache])).toEqual([
      [0, false],
      [0, false],
    ]);
    expect(current(dataDir)).toBe(version);
    expect(readdirSync(join(dataDir, 'sync')).sort()).toEqual(['current', version].sort());
  });

  it('a sync with nothing changed fetches no module: the listing names the hash of each module (issue 33: the dispatch of a sharded run)', async () => {
    const m = await manager();
    await uploadMib(m, 'ACME-MIB.mib', ACME);
    const listed = (await (await fetch(`${m.d.url}/api/mibs`)).json()) as { name: string; sha256: string }[];
    const acme = listed.find((x) => x.name === 'ACME-MIB')!;
    const served = Buffer.from(await (await fetch(`${m.d.url}/api/mibs/ACME-MIB`)).arrayBuffer());
    expect(acme.sha256).toBe(createHash('sha256').update(served).digest('hex'));
    // A proxy in front of the manager counts what the worker asks for.
    const hits: string[] = [];
    const proxy = createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      void fetch(`${m.d.url}${req.url}`).then(async (up) => {
        res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/octet-stream' });
        res.end(Buffer.from(await up.arrayBuffer()));
      });
    });
    await new Promise<void>((res) => proxy.listen(0, '127.0.0.1', res));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
      const dataDir = tempDir('svc-worker-data-');
      const { log } = logged();
      const first = await syncFromManager({ managerUrl: url, dataDir, log });
      expect(first.changed).toBe(listed.length);
      expect(hits.filter((h) => h.startsWith('GET /api/mibs/'))).toHaveLength(listed.length);
      hits.length = 0;
      expect((await syncFromManager({ managerUrl: url, dataDir, log })).changed).toBe(0);
      expect(hits).toEqual(['GET /api/schemas', 'GET /api/mibs']);
      // A module recompiled with other content is fetched again, alone.
      const changed = ACME.replace(/DESCRIPTION\s+"[^"]*"/, 'DESCRIPTION "changed"');
      expect(changed).not.toBe(ACME);
      await uploadMib(m, 'ACME-MIB.mib', changed);
      hits.length = 0;
      expect((await syncFromManager({ managerUrl: url, dataDir, log })).changed).toBe(1);
      expect(hits.filter((h) => h.startsWith('GET /api/mibs/'))).toEqual(['GET /api/mibs/ACME-MIB']);
    } finally {
      await new Promise((res) => proxy.close(res));
    }
  });

  it('a replaced file is updated and a deleted one removed, in a new version switched atomically', async () => {
    const m = await manager();
    await uploadSchema(m, 'counter.avsc', AVSC);
    await uploadSchema(m, 'pm.proto', PROTO, 'vendor/nokia');
    const big = (c: string) => `{"pad":"${c.repeat(2 << 20)}"}`; // 2 MiB: a read during the switch takes a while
    await uploadSchema(m, 'big.json', big('a'));
    await uploadMib(m, 'ACME-MIB.mib', ACME);
    const dataDir = tempDir('svc-worker-data-');
    const { log } = logged();
    const first = await syncFromManager({ managerUrl: m.d.url, dataDir, log });
    const v1 = current(dataDir);
    const oldReal = join(dataDir, 'sync', v1, 'schemas', 'counter.avsc');

    // Same size, other bytes: the modification time tells the change.
    const changedAvsc = AVSC.replace('Counter', 'Cauntor');
    expect(changedAvsc.length).toBe(AVSC.length);
    await uploadSchema(m, 'counter.avsc', changedAvsc);
    await uploadSchema(m, 'big.json', big('b'));
    expect((await m.d.call('DELETE', '/api/schemas/vendor/nokia/pm.proto')).status).toBe(204);
    expect((await m.d.call('DELETE', '/api/mibs/ACME-MIB')).status).toBe(200);

    // A run reading meanwhile sees the whole old file or the whole new one.
    let syncing = true;
    const seen = new Set<string>();
    const reader = (async () => {
      while (syncing) {
        const text = readFileSync(join(first.schemaDir, 'big.json'), 'utf8');
        seen.add(text === big('a') ? 'old' : text === big('b') ? 'new' : `torn ${text.length}`);
        await new Promise((res) => setImmediate(res));
      }
    })();
    const r = await syncFromManager({ managerUrl: m.d.url, dataDir, log }).finally(() => (syncing = false));
    await reader;
    expect([...seen].filter((s) => s.startsWith('torn'))).toEqual([]);
    expect(seen.has('old')).toBe(true); // the reader did read during the sync
    expect(readFileSync(join(r.schemaDir, 'big.json'), 'utf8')).toBe(big('b'));

    expect(r.changed).toBe(4);
    expect(r.fromCache).toBe(false);
    expect(readFileSync(join(r.schemaDir, 'counter.avsc'), 'utf8')).toBe(changedAvsc);
    expect(existsSync(join(r.schemaDir, 'vendor/nokia/pm.proto'))).toBe(false);
    expect(files(r.schemaDir)).toEqual(['big.json', 'counter.avsc']);
    expect(existsSync(join(r.mibDir, 'ACME-MIB.json'))).toBe(false);
    expect(files(r.mibDir)).toEqual([...(await managerMibs(m)).keys()].sort());

    // The previous version stays for runs that started on it; the one before goes at the next switch.
    const v2 = current(dataDir);
    expect(v2).not.toBe(v1);
    expect(readFileSync(oldReal, 'utf8')).toBe(AVSC);
    await uploadSchema(m, 'counter.avsc', AVSC.replace('Counter', 'Kounter'));
    expect((await syncFromManager({ managerUrl: m.d.url, dataDir, log })).changed).toBe(1);
    expect(readdirSync(join(dataDir, 'sync')).sort()).toEqual(['current', v2, current(dataDir)].sort());
  });

  it('the manager stopped: the earlier copy is used with a warning; with no copy the error says what to check', async () => {
    const m = await manager();
    await uploadSchema(m, 'counter.avsc', AVSC);
    const dataDir = tempDir('svc-worker-data-');
    const { log, warnings } = logged();
    const first = await syncFromManager({ managerUrl: m.d.url, dataDir, log });
    await m.d.stop();

    const r = await syncFromManager({ managerUrl: m.d.url, dataDir, log, timeoutMs: 2000 });
    expect(r).toEqual({ ...first, changed: 0, fromCache: true });
    expect(readFileSync(join(r.schemaDir, 'counter.avsc'), 'utf8')).toBe(AVSC);
    expect(warnings().map((w) => w.msg)).toEqual(['manager unreachable: this run uses the schemas and MIBs synced earlier']);
    expect(warnings()[0]).toMatchObject({ manager: m.d.url, err: expect.stringContaining(`${m.d.url}/api/schemas`) });

    const empty = tempDir('svc-worker-data-');
    const err = await syncFromManager({ managerUrl: m.d.url, dataDir: empty, log, timeoutMs: 2000 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(
      `cannot reach the manager at ${m.d.url} to sync schemas and MIBs, and no complete earlier copy exists in ${join(empty, 'sync')}: check SVC_MANAGER_URL`,
    );
    expect(existsSync(join(empty, 'schemas'))).toBe(false);
  });

  it('a proxy answering 503 while the manager restarts counts as unreachable', async () => {
    const hits: string[] = [];
    const proxy = createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"detail":"upstream restarting"}');
    });
    await new Promise<void>((res) => proxy.listen(0, '127.0.0.1', res));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
      const err = await syncFromManager({ managerUrl: url, dataDir: tempDir('svc-worker-data-'), log: logged().log }).catch((e: Error) => e);
      expect((err as Error).message).toMatch(/^cannot reach the manager at .* no complete earlier copy exists .*HTTP 503 upstream restarting/);
      expect(hits).toEqual(['GET /api/schemas']);
    } finally {
      await new Promise((res) => proxy.close(res));
    }
  });

  it('sends X-API-Key; without the key the manager refuses and the cache does not stand in', async () => {
    const m = await manager({ SVC_API_KEY: 'sync-key-1', SVC_INTERNAL_AUTH_MODE: 'enforce' });
    await uploadSchema(m, 'counter.avsc', AVSC);
    await uploadMib(m, 'ACME-MIB.mib', ACME);
    const dataDir = tempDir('svc-worker-data-');
    const { log } = logged();
    const r = await syncFromManager({ managerUrl: m.d.url, dataDir, apiKey: 'sync-key-1', log });
    expect(readFileSync(join(r.schemaDir, 'counter.avsc'), 'utf8')).toBe(AVSC);
    expect(existsSync(join(r.mibDir, 'ACME-MIB.json'))).toBe(true);

    for (const apiKey of [undefined, 'wrong-key']) {
      const err = await syncFromManager({ managerUrl: m.d.url, dataDir, ...(apiKey ? { apiKey } : {}), log }).catch((e: Error) => e);
      expect((err as Error).message).toMatch(
        /^the manager refused GET http:\/\/127\.0\.0\.1:\d+\/api\/schemas with HTTP 401 .*: set SVC_API_KEY to the manager's API key$/,
      );
    }
  });

  it('leaves a real folder at <dataDir>/schemas alone and says so', async () => {
    const m = await manager();
    const dataDir = tempDir('svc-worker-data-');
    mkdirSync(join(dataDir, 'schemas'));
    const err = await syncFromManager({ managerUrl: m.d.url, dataDir, log: logged().log }).catch((e: Error) => e);
    expect((err as Error).message).toBe(
      `${join(dataDir, 'schemas')} exists and is not the link to the synced copy (${join(dataDir, 'sync/current/schemas')}): move it away, the worker syncs schemas from the manager`,
    );
    expect(statSync(join(dataDir, 'schemas')).isDirectory()).toBe(true);
  });
});
