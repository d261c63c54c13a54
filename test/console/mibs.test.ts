// The console's MIB catalog endpoints (spec doc 1: MIB upload, download, delete, status and the
// /api/mibs rows of section 4) over real HTTP: multipart uploads with FormData, the status views,
// validate-batch, reload, fetch-dependencies from a bundled sub-directory and from a real HTTP
// repository, download (raw and zip, checked with unzip), the three deletes, errors as {detail},
// stats and the WebSocket `mibs` message. References: libsmi's smilint (error lines), net-snmp's
// snmptranslate (OIDs of uploaded modules), Info-ZIP's unzip (archives).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { MIB_MAX_FILE_BYTES, PRODUCT_MIB_DIR } from '../../src/mib/store.js';
import { tempDir } from '../helpers/fs.js';
import { acme, CORPUS, FIXTURES, snmptranslate } from '../mib/helpers.js';
import { detailOnly, loggedIn, started } from './helpers.js';

type Api = Awaited<ReturnType<typeof loggedIn>>;
const ERRORS = join(FIXTURES, 'errors');
const fixture = (name: string) => readFileSync(join(ERRORS, name));
const PRODUCT = readdirSync(PRODUCT_MIB_DIR)
  .filter((f) => f.endsWith('.txt'))
  .map((f) => f.replace(/\.txt$/, ''));

/** A console whose life spans a describe (helpers.ts stops consoles after each test otherwise). */
async function sharedConsole(env: Record<string, string> = {}, dir = mkdtempSync(join(tmpdir(), 'svc-mibs-console-'))) {
  const a = await loggedIn(env, dir);
  started.splice(started.indexOf(a.c), 1);
  return a;
}

/** POST multipart: files[] (or `field`) plus text fields, like the browser's FormData. */
async function upload(
  a: Api,
  files: [string, string | Buffer][],
  fields: Record<string, string> = {},
  o: { path?: string; field?: string; fieldsFirst?: boolean } = {},
) {
  const fd = new FormData();
  const addFields = () => Object.entries(fields).forEach(([k, v]) => fd.append(k, v));
  if (o.fieldsFirst) addFields();
  for (const [name, data] of files) fd.append(o.field ?? 'files[]', new Blob([data]), name);
  if (!o.fieldsFirst) addFields();
  const res = await fetch(a.c.url + (o.path ?? '/api/mibs/upload'), { method: 'POST', headers: { 'x-auth-token': a.token }, body: fd });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

/** A request whose answer is kept as bytes (download). */
async function bytes(a: Api, path: string, body: unknown) {
  const res = await fetch(a.c.url + path, {
    method: 'POST',
    headers: { 'x-auth-token': a.token, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, data: Buffer.from(await res.arrayBuffer()) };
}

/** snmptranslate -On over the corpus plus the given module files. */
function netSnmpOid(files: Record<string, string>, name: string): string {
  const d = tempDir('svc-mib-peer-');
  for (const [n, t] of Object.entries(files)) writeFileSync(join(d, n), t);
  return snmptranslate([CORPUS, d], ['-On'], [name]).trim();
}

/** smilint's line for the first finding whose message matches. */
function smilintLine(path: string, re: RegExp): number {
  const r = spawnSync('smilint', ['-l', '3', path], { encoding: 'utf8', env: { ...process.env, SMIPATH: CORPUS } });
  const hit = [...`${r.stdout}${r.stderr}`.matchAll(/^[^:\n]+:(\d+): (.*)$/gm)].find((m) => re.test(m[2]!));
  return Number(hit![1]);
}

/** Every file below `dir` with size and mtime (to prove that nothing was written). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const st = statSync(join(e.parentPath, e.name));
    out[join(e.parentPath, e.name)] = `${st.size}:${st.mtimeMs}`;
  }
  return out;
}

/** A WebSocket client collecting messages; `next(type)` waits for the next message of a type. */
async function wsClient(a: Api) {
  const ws = new WebSocket(`${a.c.url.replace('http', 'ws')}/api/ws?token=${a.token}`);
  const messages: any[] = [];
  const waiters: { type: string; resolve: (m: any) => void }[] = [];
  ws.on('message', (raw: Buffer) => {
    const m = JSON.parse(raw.toString());
    messages.push(m);
    for (const w of waiters.filter((x) => x.type === m.type)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  const next = (type: string) => new Promise<any>((resolve) => waiters.push({ type, resolve }));
  await next('full_state');
  return { ws, messages, next };
}

const stats = async (a: Api) => (await a.api('GET', '/api/stats/')).body.mibs as { uploads: number; compiled: number; failed: number };
const status = async (a: Api) => {
  const r = await a.api('GET', '/api/mibs/status');
  expect(r.status).toBe(200);
  return r.body;
};
const rows = (st: any, path: string) => st.source_inventory.filter((r: any) => r.path === path);
const groupOf = (st: any, g: string) => st.source_groups.find((x: any) => x.group === g);

/** A real HTTP "MIB repository" with the net-snmp corpus: /mibs/<MODULE>. */
async function repository() {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url!);
    const m = /^\/mibs\/([A-Za-z0-9-]+)$/.exec(req.url!);
    const path = m && join(CORPUS, `${m[1]}.txt`);
    if (!path || !existsSync(path)) return res.writeHead(404).end('not here');
    res.writeHead(200, { 'content-type': 'text/plain' }).end(readFileSync(path));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, requests, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mibs` };
}

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  return port;
}

describe('console MIB catalog: upload, status, validate-batch, reload, errors', () => {
  let a: Api;
  let lib: string;
  beforeAll(async () => {
    // A configured bundled directory: one top-level source (group bundled-1) and a library below it.
    lib = mkdtempSync(join(tmpdir(), 'svc-mibs-lib-'));
    writeFileSync(join(lib, 'ACME-BUNDLED-MIB.txt'), acme('ACME-BUNDLED-MIB', { arc: 100 }));
    mkdirSync(join(lib, 'vendor', 'disman'), { recursive: true });
    writeFileSync(join(lib, 'vendor', 'DISMAN-TRACEROUTE-MIB.txt'), readFileSync(join(CORPUS, 'DISMAN-TRACEROUTE-MIB.txt')));
    writeFileSync(join(lib, 'vendor', 'disman', 'DISMAN-PING-MIB.mib'), readFileSync(join(CORPUS, 'DISMAN-PING-MIB.txt')));
    a = await sharedConsole({ SVC_MIB_BUNDLED_SOURCE_DIR: lib });
  });
  afterAll(async () => {
    await a.c.stop();
    rmSync(a.dir, { recursive: true, force: true });
    rmSync(lib, { recursive: true, force: true });
  });

  it('the starting status: the product bundle plus the configured bundled directory', async () => {
    const st = await status(a);
    expect(st.mibs).toEqual([...PRODUCT, 'ACME-BUNDLED-MIB'].sort());
    expect(st.active_modules).toEqual(st.mibs);
    expect(st.errors).toEqual([]);
    expect(st.failed_modules).toEqual([]);
    expect(st.source_groups.map((g: any) => [g.group, g.bundled, g.files, g.active])).toEqual([
      ['bundled', true, 37, 37],
      ['bundled-1', true, 1, 1],
    ]);
    expect(rows(st, 'bundled-1/ACME-BUNDLED-MIB.txt')).toEqual([expect.objectContaining({ bundled: true, status: 'active', module: 'ACME-BUNDLED-MIB' })]);
    expect(st.bundled_dirs).toEqual([lib, PRODUCT_MIB_DIR.replace(/\/$/, '')]);
    expect(st.mib_dir).toBe(join(a.dir, 'mibs'));
    expect(st.source_dir).toBe(join(a.dir, 'mib-sources'));
  });

  it('upload of several files, one with a syntax error (file, line, token), one missing an import: the rest compiles; stats move; the WebSocket gets `mibs`', async () => {
    const client = await wsClient(a);
    const before = await stats(a);
    const x = acme('ACME-X-MIB', { arc: 1 });
    const y = acme('ACME-Y-MIB', { arc: 2, imports: ['acmeXMIB FROM ACME-X-MIB'], body: 'acmeYUnder OBJECT IDENTIFIER ::= { acmeXMIB 5 }\n' });
    const mibsMessage = client.next('mibs');
    const r = await upload(a, [
      ['BROKEN-MIB.txt', fixture('BROKEN-MIB.txt')],
      ['ACME-X-MIB.txt', x],
      ['NEEDS-MISSING-MIB.my', fixture('NEEDS-MISSING-MIB.txt')],
      ['ACME-Y-MIB.mib', y],
    ]);
    expect(r.status).toBe(200);
    const syntaxLine = smilintLine(join(ERRORS, 'BROKEN-MIB.txt'), /^syntax error/);
    const missingLine = smilintLine(join(ERRORS, 'NEEDS-MISSING-MIB.txt'), /ACME-NOT-THERE-MIB/);
    expect(r.body.compiled).toEqual(['ACME-X-MIB', 'ACME-Y-MIB']);
    expect(r.body.files).toEqual(['common/BROKEN-MIB.txt', 'common/ACME-X-MIB.txt', 'common/NEEDS-MISSING-MIB.my', 'common/ACME-Y-MIB.mib']);
    expect(r.body.results).toEqual({
      'ACME-X-MIB': 'compiled',
      'ACME-Y-MIB': 'compiled',
      'BROKEN-MIB': `failed: common/BROKEN-MIB.txt:${syntaxLine}:27 unexpected ']' in an OBJECT IDENTIFIER value (expected a name, a number or '}')`,
      'NEEDS-MISSING-MIB': expect.stringMatching(
        new RegExp(`^failed: common/NEEDS-MISSING-MIB\\.my:${missingLine}:\\d+ imports from missing module ACME-NOT-THERE-MIB$`),
      ),
    });
    const broken = r.body.failed.find((f: any) => f.module === 'BROKEN-MIB');
    expect(broken).toMatchObject({ path: 'common/BROKEN-MIB.txt', group: 'common', missing: [] });
    expect(broken.errors[0]).toMatchObject({ file: 'common/BROKEN-MIB.txt', line: syntaxLine, column: 27, token: ']' });
    expect(r.body.failed.find((f: any) => f.module === 'NEEDS-MISSING-MIB').missing).toEqual(['ACME-NOT-THERE-MIB']);

    const st = await status(a);
    expect(st.mibs).toEqual([...PRODUCT, 'ACME-BUNDLED-MIB', 'ACME-X-MIB', 'ACME-Y-MIB'].sort());
    expect(st.errors.map((f: any) => f.module).sort()).toEqual(['BROKEN-MIB', 'NEEDS-MISSING-MIB']);
    expect(st.failed_modules).toEqual(st.errors);
    expect(rows(st, 'common/NEEDS-MISSING-MIB.my')).toEqual([
      expect.objectContaining({
        group: 'common',
        file: 'NEEDS-MISSING-MIB.my',
        status: 'failed',
        missing: ['ACME-NOT-THERE-MIB'],
        bundled: false,
        size_bytes: fixture('NEEDS-MISSING-MIB.txt').length,
      }),
    ]);
    expect(rows(st, 'common/ACME-Y-MIB.mib')).toEqual([expect.objectContaining({ status: 'active', module: 'ACME-Y-MIB', last_updated: '202601010000Z' })]);
    expect(groupOf(st, 'common')).toEqual({
      group: 'common',
      bundled: false,
      files: 4,
      modules: 4,
      active: 2,
      shadowed: 0,
      failed: 2,
      size_bytes: [fixture('BROKEN-MIB.txt'), fixture('NEEDS-MISSING-MIB.txt'), x, y].reduce((n, d) => n + Buffer.byteLength(d), 0),
    });
    // Stored as sent; compiled to SVC_MIB_DIR with net-snmp's OIDs.
    expect(readFileSync(join(a.dir, 'mib-sources', 'common', 'ACME-Y-MIB.mib'), 'utf8')).toBe(y);
    const json = JSON.parse(readFileSync(join(a.dir, 'mibs', 'ACME-Y-MIB.json'), 'utf8'));
    const want = netSnmpOid({ 'ACME-X-MIB.txt': x, 'ACME-Y-MIB.txt': y }, 'ACME-Y-MIB::acmeYUnder');
    expect(want).toBe('.1.3.6.1.4.1.424242.1.5');
    expect('.' + json.nodes.find((n: any) => n.name === 'acmeYUnder').oid).toBe(want);

    expect(await stats(a)).toEqual({ uploads: before.uploads + 4, compiled: before.compiled + 2, failed: before.failed + 2 });
    const m = await mibsMessage;
    expect(m.data).toEqual({ active: st.mibs.length, failed: 2, shadowed: 0, groups: 3, compiled_at: st.compiled_at });
    expect(m.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    client.ws.close();
  });

  it('source_group: a custom group (fields before or after the files); compile_mode partial keeps what resolves, full fails it again', async () => {
    // BROKEN-MIB under another name and arc (the same lines), so that it is alone in its module name.
    const labText = fixture('BROKEN-MIB.txt')
      .toString()
      .replace(/BROKEN-MIB/g, 'BROKEN-LAB-MIB')
      .replace(/brokenMIB/g, 'brokenLab')
      .replace(/goodOne|alsoGood|badOne/g, (m) => `lab${m}`)
      .replace('424243', '424245');
    const r = await upload(a, [['BROKEN-LAB-MIB.txt', labText]], { source_group: 'lab', compile_mode: 'partial' }, { fieldsFirst: true });
    expect(r.status).toBe(200);
    expect(r.body.files).toEqual(['lab/BROKEN-LAB-MIB.txt']);
    expect(r.body.results).toEqual({ 'BROKEN-LAB-MIB': 'compiled' });
    expect(readFileSync(join(a.dir, 'mib-sources', 'lab', 'BROKEN-LAB-MIB.txt'), 'utf8')).toBe(labText);
    let st = await status(a);
    expect(rows(st, 'lab/BROKEN-LAB-MIB.txt')).toEqual([expect.objectContaining({ group: 'lab', status: 'active', module: 'BROKEN-LAB-MIB' })]);
    const json = JSON.parse(readFileSync(join(a.dir, 'mibs', 'BROKEN-LAB-MIB.json'), 'utf8'));
    expect(json.nodes.map((n: any) => n.name).sort()).toEqual(['brokenLab', 'labalsoGood', 'labgoodOne']);
    expect('.' + json.nodes.find((n: any) => n.name === 'labalsoGood').oid).toBe(snmptranslate([CORPUS], ['-On'], ['SNMPv2-SMI::enterprises.424245.3']).trim());
    expect(json.diagnostics).toContainEqual(
      expect.objectContaining({ severity: 'warning', token: ']', line: smilintLine(join(ERRORS, 'BROKEN-MIB.txt'), /^syntax error/) }),
    );
    // Full mode again (the default): the module fails.
    const full = await upload(a, [['BROKEN-LAB-MIB.txt', labText]], { source_group: 'lab' });
    expect(full.body.results['BROKEN-LAB-MIB']).toMatch(/^failed: lab\/BROKEN-LAB-MIB.txt:27:27 unexpected '\]'/);
    st = await status(a);
    expect(st.mibs).not.toContain('BROKEN-LAB-MIB');
    expect(rows(st, 'lab/BROKEN-LAB-MIB.txt')[0].status).toBe('failed');
    expect(groupOf(st, 'lab')).toEqual({
      group: 'lab',
      bundled: false,
      files: 1,
      modules: 1,
      active: 0,
      shadowed: 0,
      failed: 1,
      size_bytes: Buffer.byteLength(labText),
    });
    expect(existsSync(join(a.dir, 'mibs', 'BROKEN-LAB-MIB.json'))).toBe(false);
    // Explicit full and an empty mode are the default.
    expect((await upload(a, [['BROKEN-LAB-MIB.txt', labText]], { source_group: 'lab', compile_mode: 'partial' })).body.compiled).toEqual(['BROKEN-LAB-MIB']);
    expect((await upload(a, [['BROKEN-LAB-MIB.txt', labText]], { source_group: 'lab', compile_mode: 'full' })).body.compiled).toEqual([]);
    await upload(a, [['BROKEN-LAB-MIB.txt', labText]], { source_group: 'lab', compile_mode: 'partial' });
    expect((await upload(a, [['BROKEN-LAB-MIB.txt', labText]], { source_group: 'lab', compile_mode: '' })).body.compiled).toEqual([]);
  });

  it('shadowing: uploaded beats bundled; two user groups: newer LAST-UPDATED wins, a tie goes to the group first by name; shadowed rows and group totals', async () => {
    const IF = readFileSync(join(PRODUCT_MIB_DIR, 'IF-MIB.txt'), 'utf8');
    const older = IF.replace('LAST-UPDATED "200006140000Z"', 'LAST-UPDATED "199001010000Z"').replace(
      /\nEND\s*$/,
      '\nifAcmeMark OBJECT IDENTIFIER ::= { ifMIBObjects 4242 }\nEND\n',
    );
    const r = await upload(a, [['IF-MIB.txt', older]], { source_group: 'vendor' });
    expect(r.body.results).toEqual({ 'IF-MIB': 'compiled' });
    let st = await status(a);
    expect(rows(st, 'bundled/IF-MIB.txt')).toEqual([
      expect.objectContaining({
        status: 'shadowed',
        bundled: true,
        last_updated: '200006140000Z',
        shadowed_by: { path: 'vendor/IF-MIB.txt', group: 'vendor' },
      }),
    ]);
    expect(rows(st, 'vendor/IF-MIB.txt')).toEqual([expect.objectContaining({ status: 'active', last_updated: '199001010000Z' })]);
    expect(st.mibs.filter((m: string) => m === 'IF-MIB')).toHaveLength(1);
    expect(groupOf(st, 'bundled')).toMatchObject({ files: 37, modules: 37, active: 36, shadowed: 1, failed: 0 });
    expect(groupOf(st, 'vendor')).toMatchObject({ files: 1, modules: 1, active: 1, shadowed: 0 });
    expect(JSON.parse(readFileSync(join(a.dir, 'mibs', 'IF-MIB.json'), 'utf8')).nodes.some((n: any) => n.name === 'ifAcmeMark')).toBe(true);

    // Two user groups. zeta first, then the same date in alpha: alpha (first by name) wins the tie.
    const S = (arc: number, lu: string) => acme('ACME-S-MIB', { arc, lastUpdated: lu });
    await upload(a, [['ACME-S-MIB.txt', S(21, '202001010000Z')]], { source_group: 'zeta' });
    expect((await upload(a, [['ACME-S-MIB.txt', S(22, '202001010000Z')]], { source_group: 'alpha' })).body.results).toEqual({ 'ACME-S-MIB': 'compiled' });
    st = await status(a);
    expect(rows(st, 'zeta/ACME-S-MIB.txt')).toEqual([
      expect.objectContaining({ status: 'shadowed', shadowed_by: { path: 'alpha/ACME-S-MIB.txt', group: 'alpha' } }),
    ]);
    // A newer zeta wins; the alpha row is now the shadowed one.
    expect((await upload(a, [['ACME-S-MIB.txt', S(23, '202201010000Z')]], { source_group: 'zeta' })).body.results).toEqual({ 'ACME-S-MIB': 'compiled' });
    st = await status(a);
    expect(rows(st, 'alpha/ACME-S-MIB.txt')).toEqual([
      expect.objectContaining({ status: 'shadowed', last_updated: '202001010000Z', shadowed_by: { path: 'zeta/ACME-S-MIB.txt', group: 'zeta' } }),
    ]);
    expect(rows(st, 'zeta/ACME-S-MIB.txt')[0].status).toBe('active');
    expect(JSON.parse(readFileSync(join(a.dir, 'mibs', 'ACME-S-MIB.json'), 'utf8')).identity.oid).toBe('1.3.6.1.4.1.424242.23');
    expect(groupOf(st, 'alpha')).toMatchObject({ files: 1, modules: 1, active: 0, shadowed: 1, failed: 0 });
    expect(groupOf(st, 'zeta')).toMatchObject({ files: 1, modules: 1, active: 1, shadowed: 0, failed: 0 });
    // Uploading the loser again says so.
    expect((await upload(a, [['ACME-S-MIB.txt', S(22, '202001010000Z')]], { source_group: 'alpha' })).body.results).toEqual({
      'ACME-S-MIB': 'shadowed by zeta/ACME-S-MIB.txt',
    });
    // source_groups: user groups by name, then the bundled ones.
    expect(st.source_groups.map((g: any) => g.group)).toEqual(['alpha', 'common', 'lab', 'vendor', 'zeta', 'bundled', 'bundled-1']);
  });

  it('validate-batch reports would_compile, would_fail, missing, would_shadow, would_be_shadowed, and writes nothing', async () => {
    const before = { st: await status(a), stats: await stats(a), sources: snapshot(join(a.dir, 'mib-sources')), compiled: snapshot(join(a.dir, 'mibs')) };
    const files: [string, string | Buffer][] = [
      ['TCP-MIB.txt', readFileSync(join(PRODUCT_MIB_DIR, 'TCP-MIB.txt'))],
      ['ACME-S-MIB.txt', acme('ACME-S-MIB', { arc: 24, lastUpdated: '202101010000Z' })],
      ['NEEDS-MISSING-MIB.txt', fixture('NEEDS-MISSING-MIB.txt')],
      ['ACME-V-MIB.txt', acme('ACME-V-MIB', { arc: 25 })],
    ];
    const r = await upload(a, files, { source_group: 'check' }, { path: '/api/mibs/validate-batch' });
    expect(r.status).toBe(200);
    expect(r.body.group).toBe('check');
    expect(r.body.would_compile.sort()).toEqual(['ACME-V-MIB', 'TCP-MIB']);
    expect(r.body.would_fail.map((f: any) => [f.module, f.path, f.missing])).toEqual([
      ['NEEDS-MISSING-MIB', 'check/NEEDS-MISSING-MIB.txt', ['ACME-NOT-THERE-MIB']],
    ]);
    expect(r.body.missing).toEqual(['ACME-NOT-THERE-MIB']);
    // NEEDS-MISSING-MIB ties with common/NEEDS-MISSING-MIB.my (same LAST-UPDATED): check sorts first.
    expect(r.body.would_shadow).toEqual([
      { module: 'TCP-MIB', path: 'bundled/TCP-MIB.txt', group: 'bundled' },
      { module: 'NEEDS-MISSING-MIB', path: 'common/NEEDS-MISSING-MIB.my', group: 'common' },
    ]);
    expect(r.body.would_be_shadowed).toEqual([{ module: 'ACME-S-MIB', by: { path: 'zeta/ACME-S-MIB.txt', group: 'zeta' } }]);
    expect(r.body.files.map((f: any) => [f.path, f.modules, f.replaces])).toEqual([
      ['check/TCP-MIB.txt', ['TCP-MIB'], false],
      ['check/ACME-S-MIB.txt', ['ACME-S-MIB'], false],
      ['check/NEEDS-MISSING-MIB.txt', ['NEEDS-MISSING-MIB'], false],
      ['check/ACME-V-MIB.txt', ['ACME-V-MIB'], false],
    ]);
    // A stored path is flagged as replaced; the syntax error shows per file.
    const again = await upload(a, [['BROKEN-MIB.txt', fixture('BROKEN-MIB.txt')]], {}, { path: '/api/mibs/validate-batch' });
    expect(again.body.files).toEqual([
      expect.objectContaining({ path: 'common/BROKEN-MIB.txt', replaces: true, errors: [expect.objectContaining({ line: 27, column: 27, token: ']' })] }),
    ]);
    expect(
      (await upload(a, [['BROKEN-MIB.txt', fixture('BROKEN-MIB.txt')]], { compile_mode: 'partial' }, { path: '/api/mibs/validate-batch' })).body.would_compile,
    ).toEqual(['BROKEN-MIB']);
    // Its errors are the upload's.
    detailOnly(await upload(a, [['x.txt', 'x']], { compile_mode: 'both' }, { path: '/api/mibs/validate-batch' }), 422);
    detailOnly(await upload(a, [['x.exe', 'x']], {}, { path: '/api/mibs/validate-batch' }), 415);
    detailOnly(await upload(a, [['x.txt', 'x']], { source_group: 'bundled' }, { path: '/api/mibs/validate-batch' }), 400);
    // Nothing written, nothing counted, nothing changed.
    expect(await status(a)).toEqual(before.st);
    expect(await stats(a)).toEqual(before.stats);
    expect(snapshot(join(a.dir, 'mib-sources'))).toEqual(before.sources);
    expect(snapshot(join(a.dir, 'mibs'))).toEqual(before.compiled);
    // The upload itself does what validate-batch said.
    const real = await upload(a, files, { source_group: 'check' });
    expect(real.body.results).toEqual({
      'TCP-MIB': 'compiled',
      'ACME-V-MIB': 'compiled',
      'ACME-S-MIB': 'shadowed by zeta/ACME-S-MIB.txt',
      'NEEDS-MISSING-MIB': expect.stringMatching(/^failed: check\/NEEDS-MISSING-MIB.txt:\d+:\d+ imports from missing module ACME-NOT-THERE-MIB$/),
    });
    const st = await status(a);
    expect(rows(st, 'common/NEEDS-MISSING-MIB.my')[0]).toMatchObject({
      status: 'shadowed',
      shadowed_by: { path: 'check/NEEDS-MISSING-MIB.txt', group: 'check' },
    });
    expect(rows(st, 'bundled/TCP-MIB.txt')[0]).toMatchObject({ status: 'shadowed', shadowed_by: { path: 'check/TCP-MIB.txt', group: 'check' } });
    expect((await a.api('POST', '/api/mibs/delete-batch', { paths: files.map(([n]) => `check/${n}`) })).body.deleted).toHaveLength(4);
    expect(await status(a)).toMatchObject({ mibs: before.st.mibs, errors: before.st.errors, source_inventory: before.st.source_inventory });
  });

  it('errors are exactly {detail}: not multipart 415, wrong extension 415, oversized 413, traversal name 400, bad compile_mode 422, bad source_group 400, no file 400; nothing stored', async () => {
    const before = { sources: snapshot(join(a.dir, 'mib-sources')), stats: await stats(a) };
    const ok: [string, string] = ['ACME-E-MIB.txt', acme('ACME-E-MIB', { arc: 30 })];
    expect(detailOnly(await a.api('POST', '/api/mibs/upload', { files: ['x'] }), 415)).toBe(
      "send the MIB files as multipart/form-data in the field files[] (got content type 'application/json')",
    );
    const noBody = await fetch(a.c.url + '/api/mibs/upload', { method: 'POST', headers: { 'x-auth-token': a.token } });
    expect(detailOnly({ status: noBody.status, body: await noBody.json() }, 415)).toContain("got content type 'none'");
    const text = await fetch(a.c.url + '/api/mibs/upload', {
      method: 'POST',
      headers: { 'x-auth-token': a.token, 'content-type': 'text/plain' },
      body: 'IF-MIB DEFINITIONS ::= BEGIN END',
    });
    expect(detailOnly({ status: text.status, body: await text.json() }, 415)).toContain("got content type 'text/plain'");
    expect(detailOnly(await upload(a, [ok, ['IF-MIB.exe', 'x']]), 415)).toBe('IF-MIB.exe: a MIB source must end in .mib, .txt or .my (or have no extension)');
    expect(detailOnly(await upload(a, [ok, ['big.mib', Buffer.alloc(MIB_MAX_FILE_BYTES + 1, 32)]]), 413)).toBe(
      `a MIB file may have at most ${MIB_MAX_FILE_BYTES} bytes`,
    );
    for (const name of ['../evil.txt', '../../etc/evil.txt', 'sub/x.txt', '..\\evil.txt', '.hidden.txt']) {
      expect(detailOnly(await upload(a, [ok, [name, 'x']]), 400)).toBe(`file name '${name}' escapes the MIB store or is hidden: give a plain file name`);
    }
    expect(detailOnly(await upload(a, [ok], { compile_mode: 'fast' }), 422)).toBe("compile_mode must be full or partial (got 'fast')");
    for (const g of ['../x', 'bundled', 'a/b', 'has space'])
      expect(detailOnly(await upload(a, [ok], { source_group: g }), 400)).toContain(`source group '${g}' is not allowed`);
    expect(detailOnly(await upload(a, [], { source_group: 'x' }), 400)).toBe('no MIB file: send one or more files in the multipart field files[]');
    expect(detailOnly(await upload(a, [ok], {}, { field: 'attachment' }), 400)).toBe("unexpected file field 'attachment': send MIB files in the field files[]");
    expect(detailOnly(await upload(a, [ok, ['empty.txt', '']]), 400)).toBe('empty.txt is empty');
    expect(detailOnly(await upload(a, [ok, ok]), 400)).toBe('ACME-E-MIB.txt is given twice in one upload');
    // Without a token.
    const anon = await fetch(a.c.url + '/api/mibs/status');
    expect(detailOnly({ status: anon.status, body: await anon.json() }, 401)).toContain('X-Auth-Token');
    expect(snapshot(join(a.dir, 'mib-sources'))).toEqual(before.sources);
    expect(existsSync(join(a.dir, 'mib-sources', 'evil.txt')) || existsSync(join(a.dir, 'mib-sources', 'common', 'evil.txt'))).toBe(false);
    expect(await stats(a)).toEqual(before.stats);
    // The accepted alternative field names and a file without extension.
    const alt = await upload(a, [['ACME-E-MIB', acme('ACME-E-MIB', { arc: 30 })]], { source_group: 'alt' }, { field: 'file' });
    expect(alt.body.files).toEqual(['alt/ACME-E-MIB']);
    expect(alt.body.compiled).toEqual(['ACME-E-MIB']);
  });

  it('reload recompiles from disk (a file dropped into a group appears); compile_mode in the body; a bad body is 422', async () => {
    const dropped = join(a.dir, 'mib-sources', 'dropped');
    mkdirSync(dropped);
    writeFileSync(join(dropped, 'ACME-R-MIB.txt'), acme('ACME-R-MIB', { arc: 40 }));
    expect((await status(a)).mibs).not.toContain('ACME-R-MIB');
    const before = await status(a);
    const r = await a.api('POST', '/api/mibs/reload');
    expect(r.status).toBe(200);
    expect(r.body.results['ACME-R-MIB']).toBe('compiled');
    expect(r.body.compiled).toContain('ACME-R-MIB');
    expect(r.body.files).toContain('dropped/ACME-R-MIB.txt');
    const st = await status(a);
    expect(st.mibs).toContain('ACME-R-MIB');
    expect(st.compiled_at > before.compiled_at).toBe(true);
    expect(rows(st, 'dropped/ACME-R-MIB.txt')).toEqual([expect.objectContaining({ status: 'active', group: 'dropped' })]);
    const partial = await a.api('POST', '/api/mibs/reload', { compile_mode: 'partial' });
    expect(partial.body.results['BROKEN-MIB']).toBe('compiled');
    expect((await a.api('POST', '/api/mibs/reload', { compile_mode: 'full' })).body.results['BROKEN-MIB']).toMatch(/^failed: /);
    expect(detailOnly(await a.api('POST', '/api/mibs/reload', { compile_mode: 'fast' }), 422)).toContain('compile_mode');
  });
});

describe('console MIB catalog: download, delete, fetch-dependencies', () => {
  let a: Api;
  let lib: string;
  let repo: Awaited<ReturnType<typeof repository>>;
  const x = acme('ACME-DL-MIB', { arc: 50 });
  beforeAll(async () => {
    lib = mkdtempSync(join(tmpdir(), 'svc-mibs-lib-'));
    mkdirSync(join(lib, 'vendor', 'disman'), { recursive: true });
    writeFileSync(join(lib, 'vendor', 'DISMAN-TRACEROUTE-MIB.txt'), readFileSync(join(CORPUS, 'DISMAN-TRACEROUTE-MIB.txt')));
    writeFileSync(join(lib, 'vendor', 'disman', 'DISMAN-PING-MIB.mib'), readFileSync(join(CORPUS, 'DISMAN-PING-MIB.txt')));
    repo = await repository();
    a = await sharedConsole({ SVC_MIB_BUNDLED_SOURCE_DIR: lib });
    const r = await upload(
      a,
      [
        ['ACME-DL-MIB.txt', x],
        ['BROKEN-MIB.txt', fixture('BROKEN-MIB.txt')],
      ],
      { source_group: 'dl' },
    );
    expect(r.status).toBe(200);
  });
  afterAll(async () => {
    await a.c.stop();
    await new Promise((r) => repo.server.close(r));
    rmSync(a.dir, { recursive: true, force: true });
    rmSync(lib, { recursive: true, force: true });
  });

  it('download: one path is the file as stored (content-disposition); several are a zip (checked with unzip); traversal 400, unknown 404, empty 422', async () => {
    const one = await bytes(a, '/api/mibs/download', { paths: ['dl/ACME-DL-MIB.txt'] });
    expect(one.status).toBe(200);
    expect(one.data.toString()).toBe(x);
    expect(one.headers.get('content-disposition')).toBe(`attachment; filename="ACME-DL-MIB.txt"; filename*=UTF-8''ACME-DL-MIB.txt`);
    expect(one.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    // The same path twice is one file.
    expect((await bytes(a, '/api/mibs/download', { paths: ['dl/ACME-DL-MIB.txt', 'dl/ACME-DL-MIB.txt'] })).data.toString()).toBe(x);
    const bundled = await bytes(a, '/api/mibs/download', { paths: ['bundled/IF-MIB.txt'] });
    expect(bundled.data).toEqual(readFileSync(join(PRODUCT_MIB_DIR, 'IF-MIB.txt')));

    const zip = await bytes(a, '/api/mibs/download', { paths: ['dl/ACME-DL-MIB.txt', 'dl/BROKEN-MIB.txt', 'bundled/IF-MIB.txt'] });
    expect(zip.status).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    expect(zip.headers.get('content-disposition')).toBe('attachment; filename="mib-sources.zip"');
    const z = join(tempDir('svc-mibs-zip-'), 'out.zip');
    writeFileSync(z, zip.data);
    const listing = execFileSync('unzip', ['-Z1', z], { encoding: 'utf8' }).trim().split('\n');
    expect(listing).toEqual(['dl/ACME-DL-MIB.txt', 'dl/BROKEN-MIB.txt', 'bundled/IF-MIB.txt']);
    expect(execFileSync('unzip', ['-tq', z], { encoding: 'utf8' })).toContain('No errors detected');
    expect(execFileSync('unzip', ['-p', z, 'dl/ACME-DL-MIB.txt'], { encoding: 'utf8' })).toBe(x);
    expect(execFileSync('unzip', ['-p', z, 'dl/BROKEN-MIB.txt'])).toEqual(fixture('BROKEN-MIB.txt'));
    expect(execFileSync('unzip', ['-p', z, 'bundled/IF-MIB.txt'])).toEqual(readFileSync(join(PRODUCT_MIB_DIR, 'IF-MIB.txt')));

    for (const p of ['../../etc/passwd', 'dl/../../x', '/etc/passwd', 'dl/sub/x.txt', 'dl']) {
      expect(detailOnly(await a.api('POST', '/api/mibs/download', { paths: ['dl/ACME-DL-MIB.txt', p] }), 400)).toContain(`path '${p}' escapes the MIB store`);
    }
    expect(detailOnly(await a.api('POST', '/api/mibs/download', { paths: ['dl/NOPE.txt'] }), 404)).toBe(
      'no MIB source dl/NOPE.txt: see source_inventory in GET /api/mibs/status for the stored paths',
    );
    detailOnly(await a.api('POST', '/api/mibs/download', { paths: [] }), 422);
    detailOnly(await a.api('POST', '/api/mibs/download', {}), 422);
  });

  it('delete: one by body, a batch (not_found listed), one by URL-encoded path; bundled 403; traversal 400; unknown 404; status and SVC_MIB_DIR follow', async () => {
    const names = ['ACME-D1-MIB.txt', 'ACME-D2-MIB.txt', 'ACME-D3-MIB.txt', 'a%41.txt', 'aA.txt', '100%.txt'];
    const files = names.map((n, i) => [n, acme(`ACME-DD${i}-MIB`, { arc: 60 + i })] as [string, string]);
    expect((await upload(a, files, { source_group: 'del' })).body.compiled).toHaveLength(6);
    const gone = (n: string) => !existsSync(join(a.dir, 'mib-sources', 'del', n));

    // Bundled sources are read-only, alone or in a batch (and then nothing of the batch goes).
    expect(detailOnly(await a.api('DELETE', '/api/mibs/file', { path: 'bundled/IF-MIB.txt' }), 403)).toMatch(
      /^bundled\/IF-MIB.txt is a read-only bundled source \(from .*\); upload a module of the same name to shadow it instead$/,
    );
    detailOnly(await a.api('POST', '/api/mibs/delete-batch', { paths: ['del/ACME-D1-MIB.txt', 'bundled/TCP-MIB.txt'] }), 403);
    detailOnly(await a.api('DELETE', '/api/mibs/' + encodeURIComponent('bundled/TCP-MIB.txt')), 403);
    expect(gone('ACME-D1-MIB.txt')).toBe(false);
    // Traversal.
    for (const p of ['../mibs/IF-MIB.json', 'del/../../x', '/etc/passwd', 'del/x/../y']) {
      detailOnly(await a.api('DELETE', '/api/mibs/file', { path: p }), 400);
      detailOnly(await a.api('POST', '/api/mibs/delete-batch', { paths: ['del/ACME-D1-MIB.txt', p] }), 400);
      expect(detailOnly(await a.api('DELETE', '/api/mibs/' + encodeURIComponent(p)), 400)).toContain('escapes the MIB store');
    }
    expect(gone('ACME-D1-MIB.txt')).toBe(false);
    expect(existsSync(join(a.dir, 'mibs', 'IF-MIB.json'))).toBe(true);

    const one = await a.api('DELETE', '/api/mibs/file', { path: 'del/ACME-D1-MIB.txt' });
    expect(one.status).toBe(200);
    const active = (await status(a)).mibs.length;
    expect(one.body).toEqual({ deleted: ['del/ACME-D1-MIB.txt'], not_found: [], active });
    expect(gone('ACME-D1-MIB.txt')).toBe(true);
    expect((await status(a)).mibs).not.toContain('ACME-DD0-MIB');
    expect(existsSync(join(a.dir, 'mibs', 'ACME-DD0-MIB.json'))).toBe(false);
    expect(detailOnly(await a.api('DELETE', '/api/mibs/file', { path: 'del/ACME-D1-MIB.txt' }), 404)).toBe(
      'no MIB source del/ACME-D1-MIB.txt: see source_inventory in GET /api/mibs/status for the stored paths',
    );
    detailOnly(await a.api('DELETE', '/api/mibs/file', {}), 422);

    const batch = await a.api('POST', '/api/mibs/delete-batch', { paths: ['del/ACME-D2-MIB.txt', 'del/NOPE.txt', 'nogroup/x.txt'] });
    expect(batch.body).toEqual({ deleted: ['del/ACME-D2-MIB.txt'], not_found: ['del/NOPE.txt', 'nogroup/x.txt'], active: active - 1 });
    // A plain array is accepted too.
    expect((await a.api('POST', '/api/mibs/delete-batch', ['del/ACME-D3-MIB.txt'])).body.deleted).toEqual(['del/ACME-D3-MIB.txt']);
    detailOnly(await a.api('POST', '/api/mibs/delete-batch', { paths: [] }), 422);

    // By URL: the path is decoded once, so `a%41.txt` is not `aA.txt`, and `100%.txt` works.
    const byUrl = await a.api('DELETE', '/api/mibs/' + encodeURIComponent('del/a%41.txt'));
    expect(byUrl.body.deleted).toEqual(['del/a%41.txt']);
    expect(gone('a%41.txt')).toBe(true);
    expect(gone('aA.txt')).toBe(false);
    expect((await a.api('DELETE', '/api/mibs/' + encodeURIComponent('del/100%.txt'))).body.deleted).toEqual(['del/100%.txt']);
    expect(detailOnly(await a.api('DELETE', '/api/mibs/' + encodeURIComponent('del/100%.txt')), 404)).toContain('no MIB source del/100%.txt');
    // An unencoded slash works as well.
    expect((await a.api('DELETE', '/api/mibs/del/aA.txt')).body).toEqual({ deleted: ['del/aA.txt'], not_found: [], active: expect.any(Number) });
    // The emptied group is gone from disk and from the inventory.
    expect(existsSync(join(a.dir, 'mib-sources', 'del'))).toBe(false);
    const st = await status(a);
    expect(groupOf(st, 'del')).toBeUndefined();
    expect(st.mibs.filter((m: string) => m.startsWith('ACME-DD'))).toEqual([]);
  });

  it('fetch-dependencies: from a bundled sub-directory, then from an HTTP repository (body, then the application setting); still_missing with the reason', async () => {
    const trace = acme('ACME-TR-MIB', {
      arc: 70,
      imports: ['traceRouteMIB FROM DISMAN-TRACEROUTE-MIB'],
      body: 'acmeTrUnder OBJECT IDENTIFIER ::= { traceRouteMIB 9 }\n',
    });
    const v6 = acme('ACME-V6-MIB', { arc: 71, imports: ['ipv6MIB FROM IPV6-MIB'], body: 'acmeV6Under OBJECT IDENTIFIER ::= { ipv6MIB 9 }\n' });
    const up = await upload(
      a,
      [
        ['ACME-TR-MIB.txt', trace],
        ['ACME-V6-MIB.txt', v6],
      ],
      { source_group: 'fx' },
    );
    expect(up.body.failed.map((f: any) => [f.module, f.missing])).toEqual(
      expect.arrayContaining([
        ['ACME-TR-MIB', ['DISMAN-TRACEROUTE-MIB']],
        ['ACME-V6-MIB', ['IPV6-MIB']],
      ]),
    );
    const before = await stats(a);

    // No repository configured: the bundled library (sub-directories of the configured dir) only.
    const local = await a.api('POST', '/api/mibs/fetch-dependencies');
    expect(local.status).toBe(200);
    expect(local.body.fetched).toEqual([
      { module: 'DISMAN-TRACEROUTE-MIB', from: join(lib, 'vendor', 'DISMAN-TRACEROUTE-MIB.txt'), path: 'fx/DISMAN-TRACEROUTE-MIB.txt' },
      { module: 'DISMAN-PING-MIB', from: join(lib, 'vendor', 'disman', 'DISMAN-PING-MIB.mib'), path: 'fx/DISMAN-PING-MIB.mib' },
    ]);
    expect(local.body.still_missing).toEqual([
      { module: 'IPV6-MIB', needed_by: ['ACME-V6-MIB'], reason: expect.stringContaining('no MIB repository URL is configured') },
    ]);
    expect(local.body.compiled.sort()).toEqual(['DISMAN-PING-MIB', 'DISMAN-TRACEROUTE-MIB']);
    expect(await stats(a)).toEqual({ ...before, compiled: before.compiled + 2 });
    expect('.' + JSON.parse(readFileSync(join(a.dir, 'mibs', 'ACME-TR-MIB.json'), 'utf8')).nodes.find((n: any) => n.name === 'acmeTrUnder').oid).toBe(
      netSnmpOid({ 'ACME-TR-MIB.txt': trace }, 'ACME-TR-MIB::acmeTrUnder'),
    );

    // Unreachable repository (a closed port), given in the body.
    const port = await closedPort();
    const down = await a.api('POST', '/api/mibs/fetch-dependencies', { repository_url: `http://127.0.0.1:${port}/mibs` });
    expect(down.body.fetched).toEqual([]);
    expect(down.body.still_missing).toEqual([
      {
        module: 'IPV6-MIB',
        needed_by: ['ACME-V6-MIB'],
        reason: `IPV6-MIB: the MIB repository http://127.0.0.1:${port}/mibs/IPV6-MIB cannot be reached (ECONNREFUSED); check mib_repository_url and the network`,
      },
    ]);

    // The application setting mib_repository_url: IPV6-MIB, then IPV6-TC which it imports.
    expect((await a.api('POST', '/api/settings/app', { mib_repository_url: repo.url })).status).toBe(200);
    repo.requests.length = 0;
    const remote = await a.api('POST', '/api/mibs/fetch-dependencies');
    expect(remote.body.fetched).toEqual([
      { module: 'IPV6-MIB', from: `${repo.url}/IPV6-MIB`, path: 'fx/IPV6-MIB.mib' },
      { module: 'IPV6-TC', from: `${repo.url}/IPV6-TC`, path: 'fx/IPV6-TC.mib' },
    ]);
    expect(repo.requests).toEqual(['/mibs/IPV6-MIB', '/mibs/IPV6-TC']);
    expect(remote.body.still_missing).toEqual([]);
    expect(readFileSync(join(a.dir, 'mib-sources', 'fx', 'IPV6-MIB.mib'))).toEqual(readFileSync(join(CORPUS, 'IPV6-MIB.txt')));
    const st = await status(a);
    expect(st.errors.filter((f: any) => f.group === 'fx')).toEqual([]);
    expect(st.mibs).toEqual(expect.arrayContaining(['ACME-TR-MIB', 'ACME-V6-MIB', 'IPV6-MIB', 'IPV6-TC']));
    expect('.' + JSON.parse(readFileSync(join(a.dir, 'mibs', 'ACME-V6-MIB.json'), 'utf8')).nodes.find((n: any) => n.name === 'acmeV6Under').oid).toBe(
      netSnmpOid({ 'ACME-V6-MIB.txt': v6 }, 'ACME-V6-MIB::acmeV6Under'),
    );
    // The body overrides the setting; a module the repository does not have.
    await upload(a, [['NEEDS-MISSING-MIB.txt', fixture('NEEDS-MISSING-MIB.txt')]], { source_group: 'fx' });
    repo.requests.length = 0;
    const notThere = await a.api('POST', '/api/mibs/fetch-dependencies', { repository_url: `${repo.url}/` });
    expect(repo.requests).toEqual(['/mibs/ACME-NOT-THERE-MIB']);
    expect(notThere.body.still_missing).toEqual([
      {
        module: 'ACME-NOT-THERE-MIB',
        needed_by: ['NEEDS-MISSING-MIB'],
        reason: `ACME-NOT-THERE-MIB: not found in the bundled sources or at ${repo.url}/ACME-NOT-THERE-MIB`,
      },
    ]);
    detailOnly(await a.api('POST', '/api/mibs/fetch-dependencies', { repository_url: {} }), 422);
  });

  it('a file named in non-ASCII (日本.mib) downloads with filename* in UTF-8 and an ASCII fallback; control characters in a name are 400', async () => {
    const jp = acme('ACME-JP-MIB', { arc: 80 });
    expect((await upload(a, [['日本.mib', jp]], { source_group: 'jp' })).body.files).toEqual(['jp/日本.mib']);
    const one = await bytes(a, '/api/mibs/download', { paths: ['jp/日本.mib'] });
    expect(one.status).toBe(200);
    expect(one.headers.get('content-disposition')).toBe(`attachment; filename="__.mib"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.mib`);
    expect(one.data.toString()).toBe(jp);
    const before = snapshot(join(a.dir, 'mib-sources'));
    const ctl = await upload(a, [['a\x01b.mib', jp]], { source_group: 'jp' });
    expect(ctl).toEqual({ status: 400, body: { detail: 'file name "a\\u0001b.mib" has control characters: give a plain file name' } });
    expect(snapshot(join(a.dir, 'mib-sources'))).toEqual(before);
  });

  it('an upload whose 2nd file name is over 200 bytes of UTF-8 is 400 and stores nothing (not 503 with the 1st file left behind)', async () => {
    const before = snapshot(join(a.dir, 'mib-sources'));
    const r = await upload(
      a,
      [
        ['ACME-LN1-MIB.mib', acme('ACME-LN1-MIB', { arc: 81 })],
        [`${'漢'.repeat(100)}.mib`, acme('ACME-LN2-MIB', { arc: 82 })],
      ],
      { source_group: 'ln' },
    );
    expect(r.status).toBe(400);
    expect(detailOnly(r, 400)).toContain('is 304 bytes in UTF-8; a MIB source name may have at most 200');
    expect(snapshot(join(a.dir, 'mib-sources'))).toEqual(before);
    expect(groupOf(await status(a), 'ln')).toBeUndefined();
  });

  it('delete-batch lists a path given twice once', async () => {
    await upload(a, [['ACME-TWICE-MIB.txt', acme('ACME-TWICE-MIB', { arc: 83 })]], { source_group: 'twice' });
    const r = await a.api('POST', '/api/mibs/delete-batch', ['twice/ACME-TWICE-MIB.txt', 'twice/ACME-TWICE-MIB.txt', 'twice/NOPE.txt', 'twice/NOPE.txt']);
    expect(r.body).toEqual({ deleted: ['twice/ACME-TWICE-MIB.txt'], not_found: ['twice/NOPE.txt'], active: expect.any(Number) });
  });

  it('fetch-dependencies with user:password in the repository URL: the password is sent as Basic authorization and never shown', async () => {
    const seen: (string | undefined)[] = [];
    const guarded = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(404).end('not here');
    });
    await new Promise<void>((r) => guarded.listen(0, '127.0.0.1', r));
    const port = (guarded.address() as AddressInfo).port;
    await upload(a, [['ACME-NEEDS-SECRET-MIB.txt', acme('ACME-NEEDS-SECRET-MIB', { arc: 84, imports: ['acmeSecretMIB FROM ACME-SECRET-MIB'] })]], {
      source_group: 'sec',
    });
    try {
      const r = await a.api('POST', '/api/mibs/fetch-dependencies', { repository_url: `http://ops:t0p-s3cret@127.0.0.1:${port}/mibs` });
      expect(r.status).toBe(200);
      expect(r.body.still_missing).toContainEqual({
        module: 'ACME-SECRET-MIB',
        needed_by: ['ACME-NEEDS-SECRET-MIB'],
        reason: `ACME-SECRET-MIB: not found in the bundled sources or at http://***@127.0.0.1:${port}/mibs/ACME-SECRET-MIB`,
      });
      expect(seen).toContain(`Basic ${Buffer.from('ops:t0p-s3cret').toString('base64')}`);
      const closed = await closedPort();
      const down = await a.api('POST', '/api/mibs/fetch-dependencies', { repository_url: `http://ops:t0p-s3cret@127.0.0.1:${closed}/mibs` });
      expect(down.body.still_missing).toContainEqual(
        expect.objectContaining({ module: 'ACME-SECRET-MIB', reason: expect.stringContaining('cannot be reached (ECONNREFUSED)') }),
      );
      expect(JSON.stringify([r.body, down.body])).not.toContain('t0p-s3cret');
    } finally {
      await new Promise((r) => guarded.close(r));
      await a.api('POST', '/api/mibs/delete-batch', ['sec/ACME-NEEDS-SECRET-MIB.txt']);
    }
  });
});

describe('console MIB catalog: persistence across restarts', () => {
  it('compiled JSON in SVC_MIB_DIR; a second console on the same dirs loads it (same status); a changed source is recompiled at the next start', async () => {
    const dir = tempDir('svc-mibs-persist-');
    const first = await loggedIn({}, dir);
    const x = acme('ACME-PS-MIB', { arc: 80 });
    await upload(
      first,
      [
        ['ACME-PS-MIB.txt', x],
        ['BROKEN-MIB.txt', fixture('BROKEN-MIB.txt')],
      ],
      { source_group: 'keep' },
    );
    await upload(first, [['TCP-MIB.txt', readFileSync(join(PRODUCT_MIB_DIR, 'TCP-MIB.txt'))]], { source_group: 'keep' });
    const st1 = await status(first);
    expect(readdirSync(join(dir, 'mibs')).sort()).toEqual(['_manifest.json', ...st1.mibs.map((m: string) => `${m}.json`)].sort());
    expect(JSON.parse(readFileSync(join(dir, 'mibs', 'TCP-MIB.json'), 'utf8'))).toMatchObject({
      format: 1,
      module: 'TCP-MIB',
      file: 'keep/TCP-MIB.txt',
      group: 'keep',
    });
    await first.c.stop();
    started.splice(started.indexOf(first.c), 1);

    const second = await loggedIn({}, dir);
    expect(await status(second)).toEqual(st1);
    await second.c.stop();
    started.splice(started.indexOf(second.c), 1);

    writeFileSync(join(dir, 'mib-sources', 'keep', 'ACME-PS-MIB.txt'), acme('ACME-PS-MIB', { arc: 81 }));
    const third = await loggedIn({}, dir);
    const st3 = await status(third);
    expect(st3.compiled_at > st1.compiled_at).toBe(true);
    expect(st3.mibs).toEqual(st1.mibs);
    expect(rows(st3, 'bundled/TCP-MIB.txt')[0]).toMatchObject({ status: 'shadowed', shadowed_by: { path: 'keep/TCP-MIB.txt', group: 'keep' } });
    expect(JSON.parse(readFileSync(join(dir, 'mibs', 'ACME-PS-MIB.json'), 'utf8')).identity.oid).toBe('1.3.6.1.4.1.424242.81');
    // SVC_MIB_REPOSITORY_URL is the fallback when neither the body nor the setting names one.
    const port = await closedPort();
    await third.c.stop();
    started.splice(started.indexOf(third.c), 1);
    const fourth = await loggedIn({ SVC_MIB_REPOSITORY_URL: `http://127.0.0.1:${port}` }, dir);
    await upload(fourth, [['NEEDS-MISSING-MIB.txt', fixture('NEEDS-MISSING-MIB.txt')]]);
    expect((await fourth.api('POST', '/api/mibs/fetch-dependencies')).body.still_missing[0].reason).toContain(
      `http://127.0.0.1:${port}/ACME-NOT-THERE-MIB cannot be reached`,
    );
  });
});
