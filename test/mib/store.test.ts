// The MIB store on disk (src/mib/store.ts): source groups, the shadowing rule of docs/mibs.md,
// validate, upload, reload, persistence in SVC_MIB_DIR, fetching dependencies from bundled
// sub-directories and from a real HTTP repository, reading and deleting sources. Positions of errors
// are checked against libsmi's smilint, OIDs of uploaded modules against net-snmp's snmptranslate.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError } from '../../src/core/http-errors.js';
import { MIB_MAX_FILE_BYTES, MibStore, PRODUCT_MIB_DIR, type MibStoreOptions } from '../../src/mib/store.js';
import { tempDir } from '../helpers/fs.js';
import { acme, CORPUS, FIXTURES, snmptranslate } from './helpers.js';
import { elapse } from '../helpers/wait.js';

const ERRORS = join(FIXTURES, 'errors');
const fixture = (name: string) => readFileSync(join(ERRORS, name));
const file = (name: string, text: string | Buffer) => ({ name, data: Buffer.isBuffer(text) ? text : Buffer.from(text) });
/** The product's bundled module names (37 of the corpus). */
const PRODUCT = readdirSync(PRODUCT_MIB_DIR)
  .filter((f) => f.endsWith('.txt'))
  .map((f) => f.replace(/\.txt$/, ''));

/** smilint's [line, message] findings for one file (SMIPATH: the corpus and the fixtures). */
function smilint(path: string): [number, string][] {
  const r = spawnSync('smilint', ['-l', '3', path], { encoding: 'utf8', env: { ...process.env, SMIPATH: `${CORPUS}:${ERRORS}` } });
  return [...`${r.stdout}${r.stderr}`.matchAll(/^[^:\n]+:(\d+): (.*)$/gm)].map((m) => [Number(m[1]), m[2]!]);
}

/** snmptranslate -On over the corpus plus the given module files (written to a temp directory). */
function netSnmpOid(files: Record<string, string>, name: string): string {
  const d = tempDir('svc-mib-peer-');
  for (const [n, t] of Object.entries(files)) writeFileSync(join(d, n), t);
  return snmptranslate([CORPUS, d], ['-On'], [name]).trim();
}

function dirs(bundledDirs: string[] = []): MibStoreOptions & { root: string } {
  const root = tempDir('svc-mibstore-');
  return { root, compiledDir: join(root, 'compiled'), sourceDir: join(root, 'sources'), bundledDirs };
}

/** A tree of every file below `dir` with size and mtime (to prove nothing was written). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const p = join(e.parentPath, e.name);
    const st = statSync(p);
    out[p] = `${st.size}:${st.mtimeMs}`;
  }
  return out;
}

const row = (store: MibStore, path: string, module?: string) =>
  store.status().source_inventory.filter((r) => r.path === path && (module === undefined || r.module === module));
const group = (store: MibStore, g: string) => store.status().source_groups.find((x) => x.group === g);

async function storeError(p: Promise<unknown> | (() => unknown), status: number): Promise<string> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(HttpError);
  expect((err as HttpError).statusCode).toBe(status);
  return (err as Error).message;
}

describe('MibStore: upload, errors, compile modes, groups', () => {
  it('a fresh store compiles the product bundle: 37 modules, one bundled group, nothing failed', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    const st = store.status();
    expect(st.mibs).toEqual([...PRODUCT].sort());
    expect(st.active_modules).toEqual(st.mibs);
    expect(st.errors).toEqual([]);
    expect(st.source_groups).toEqual([
      { group: 'bundled', bundled: true, files: 37, modules: 37, active: 37, shadowed: 0, failed: 0, size_bytes: expect.any(Number) },
    ]);
    expect(st.source_inventory.every((r) => r.bundled && r.status === 'active' && r.path === `bundled/${r.module}.txt`)).toBe(true);
    expect(st.bundled_dirs).toEqual([PRODUCT_MIB_DIR.replace(/\/$/, '')]);
    expect(st.mib_dir).toBe(o.compiledDir);
  });

  it('several files, one with a syntax error (file, line, column, token where smilint has it), one with a missing import named: the rest compiles', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    const a = acme('ACME-A-MIB', { arc: 1 });
    const b = acme('ACME-B-MIB', { arc: 2, imports: ['acmeAMIB FROM ACME-A-MIB'], body: 'acmeBSub OBJECT IDENTIFIER ::= { acmeAMIB 7 }\n' });
    const r = await store.upload([
      file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt')),
      file('ACME-B-MIB.mib', b),
      file('NEEDS-MISSING-MIB.txt', fixture('NEEDS-MISSING-MIB.txt')),
      file('ACME-A-MIB.my', a),
      file('USES-BROKEN-MIB', fixture('USES-BROKEN-MIB.txt')),
    ]);
    expect(r.compiled).toEqual(['ACME-A-MIB', 'ACME-B-MIB']);
    expect(r.files).toEqual([
      'common/BROKEN-MIB.txt',
      'common/ACME-B-MIB.mib',
      'common/NEEDS-MISSING-MIB.txt',
      'common/ACME-A-MIB.my',
      'common/USES-BROKEN-MIB',
    ]);
    const [syntaxLine] = smilint(join(ERRORS, 'BROKEN-MIB.txt')).find(([, m]) => m.startsWith('syntax error'))!;
    const [missingLine] = smilint(join(ERRORS, 'NEEDS-MISSING-MIB.txt')).find(([, m]) => m.includes('ACME-NOT-THERE-MIB'))!;
    const failed = new Map(r.failed.map((f) => [f.module, f]));
    expect([...failed.keys()].sort()).toEqual(['BROKEN-MIB', 'NEEDS-MISSING-MIB', 'USES-BROKEN-MIB']);
    expect(failed.get('BROKEN-MIB')).toMatchObject({
      path: 'common/BROKEN-MIB.txt',
      file: 'common/BROKEN-MIB.txt',
      group: 'common',
      missing: [],
      failedImports: [],
    });
    expect(failed.get('BROKEN-MIB')!.errors[0]).toEqual({
      severity: 'error',
      file: 'common/BROKEN-MIB.txt',
      line: syntaxLine,
      column: 27,
      token: ']',
      module: 'BROKEN-MIB',
      message: "unexpected ']' in an OBJECT IDENTIFIER value (expected a name, a number or '}')",
    });
    expect(failed.get('NEEDS-MISSING-MIB')!.missing).toEqual(['ACME-NOT-THERE-MIB']);
    expect(failed.get('NEEDS-MISSING-MIB')!.errors).toContainEqual(
      expect.objectContaining({ line: missingLine, token: 'ACME-NOT-THERE-MIB', message: 'imports from missing module ACME-NOT-THERE-MIB' }),
    );
    expect(failed.get('USES-BROKEN-MIB')).toMatchObject({ missing: [], failedImports: ['BROKEN-MIB'], path: 'common/USES-BROKEN-MIB' });
    expect(r.results).toEqual({
      'ACME-A-MIB': 'compiled',
      'ACME-B-MIB': 'compiled',
      'BROKEN-MIB': `failed: common/BROKEN-MIB.txt:${syntaxLine}:27 unexpected ']' in an OBJECT IDENTIFIER value (expected a name, a number or '}')`,
      'NEEDS-MISSING-MIB': expect.stringMatching(
        new RegExp(`^failed: common/NEEDS-MISSING-MIB.txt:${missingLine}:\\d+ imports from missing module ACME-NOT-THERE-MIB$`),
      ),
      'USES-BROKEN-MIB': expect.stringMatching(/^failed: common\/USES-BROKEN-MIB:\d+:\d+ .*BROKEN-MIB/),
    });
    // The bundle is untouched, the uploads are stored byte for byte in SVC_MIB_SOURCE_DIR/common.
    const st = store.status();
    expect(st.mibs).toEqual([...PRODUCT, 'ACME-A-MIB', 'ACME-B-MIB'].sort());
    expect(st.errors.map((f) => f.module).sort()).toEqual(['BROKEN-MIB', 'NEEDS-MISSING-MIB', 'USES-BROKEN-MIB']);
    expect(readFileSync(join(o.sourceDir, 'common', 'ACME-B-MIB.mib'), 'utf8')).toBe(b);
    expect(readFileSync(join(o.sourceDir, 'common', 'USES-BROKEN-MIB'))).toEqual(fixture('USES-BROKEN-MIB.txt'));
    expect(group(store, 'common')).toMatchObject({ bundled: false, files: 5, modules: 5, active: 2, shadowed: 0, failed: 3 });
    expect(row(store, 'common/NEEDS-MISSING-MIB.txt')[0]).toMatchObject({ status: 'failed', missing: ['ACME-NOT-THERE-MIB'], bundled: false });
    // The compiled OIDs are net-snmp's.
    const want = netSnmpOid({ 'ACME-A-MIB.txt': a, 'ACME-B-MIB.txt': b }, 'ACME-B-MIB::acmeBSub');
    expect(want).toBe('.1.3.6.1.4.1.424242.1.7');
    expect('.' + store.index().toNumeric('ACME-B-MIB::acmeBSub')!.oid).toBe(want);
    expect('.' + store.index().toNumeric('ACME-A-MIB::acmeAValue')!.oid).toBe(netSnmpOid({ 'ACME-A-MIB.txt': a }, 'ACME-A-MIB::acmeAValue'));
  });

  it('a file without a module is a failure with module null; a later fix of the file replaces it', async () => {
    const store = await MibStore.open(dirs());
    const r = await store.upload([file('notes.txt', 'just some text\n')]);
    expect(r.failed).toEqual([expect.objectContaining({ module: null, path: 'common/notes.txt' })]);
    expect(r.results['common/notes.txt']).toBe("failed: common/notes.txt:1:1 expected a module header 'NAME DEFINITIONS ::= BEGIN'");
    expect(row(store, 'common/notes.txt')).toEqual([expect.objectContaining({ module: null, status: 'failed' })]);
    expect(group(store, 'common')).toMatchObject({ files: 1, modules: 0, failed: 1 });
    const fixed = await store.upload([file('notes.txt', acme('ACME-N-MIB', { arc: 3 }))]);
    expect(fixed.compiled).toEqual(['ACME-N-MIB']);
    expect(store.status().errors).toEqual([]);
  });

  it('compile_mode partial keeps what resolves around the error (diagnostics as warnings); full fails the module again; the mode survives a restart', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    expect((await store.upload([file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt'))], { mode: 'full' })).compiled).toEqual([]);
    expect(store.index().toNumeric('BROKEN-MIB::goodOne')).toBeNull();
    const partial = await store.upload([file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt'))], { mode: 'partial' });
    expect(partial.compiled).toEqual(['BROKEN-MIB']);
    expect(partial.results).toEqual({ 'BROKEN-MIB': 'compiled' });
    const m = store.compiled('BROKEN-MIB')!.module;
    expect(m.nodes.map((n) => n.name).sort()).toEqual(['alsoGood', 'brokenMIB', 'goodOne']);
    expect(m.diagnostics).toContainEqual(
      expect.objectContaining({
        severity: 'warning',
        token: ']',
        line: smilint(join(ERRORS, 'BROKEN-MIB.txt')).find(([, x]) => x.startsWith('syntax error'))![0],
      }),
    );
    // alsoGood sits after the error: its OID is the one net-snmp gives the same arc under the module's parent.
    expect('.' + store.index().toNumeric('BROKEN-MIB::alsoGood')!.oid).toBe(snmptranslate([CORPUS], ['-On'], ['SNMPv2-SMI::enterprises.424243.3']).trim());
    expect(row(store, 'common/BROKEN-MIB.txt')).toEqual([expect.objectContaining({ status: 'active', module: 'BROKEN-MIB' })]);
    expect(JSON.parse(readFileSync(join(o.sourceDir, '.svc-modes.json'), 'utf8'))).toEqual({ 'common/BROKEN-MIB.txt': 'partial' });
    // A restart keeps the mode (the persisted compile matches), and so the module.
    const again = await MibStore.open(o);
    expect(again.status().mibs).toContain('BROKEN-MIB');
    expect(again.status().compiled_at).toBe(store.status().compiled_at);
    const full = await again.upload([file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt'))]);
    expect(full.compiled).toEqual([]);
    expect(full.failed.map((f) => f.module)).toEqual(['BROKEN-MIB']);
    expect(JSON.parse(readFileSync(join(o.sourceDir, '.svc-modes.json'), 'utf8'))).toEqual({});
  });

  it('source groups: common by default, a custom group is a folder; bad and reserved group names are 400', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    await store.upload([file('ACME-C-MIB.txt', acme('ACME-C-MIB', { arc: 4 }))]);
    const r = await store.upload([file('ACME-D-MIB.txt', acme('ACME-D-MIB', { arc: 5 }))], { group: 'lab_2.x-y' });
    expect(r.files).toEqual(['lab_2.x-y/ACME-D-MIB.txt']);
    expect(existsSync(join(o.sourceDir, 'common', 'ACME-C-MIB.txt'))).toBe(true);
    expect(existsSync(join(o.sourceDir, 'lab_2.x-y', 'ACME-D-MIB.txt'))).toBe(true);
    expect(store.compiled('ACME-D-MIB')!.module.group).toBe('lab_2.x-y');
    expect(store.status().source_groups.map((g) => g.group)).toEqual(['common', 'lab_2.x-y', 'bundled']);
    for (const bad of ['bundled', 'bundled-2', 'bundledx', '../x', 'a/b', '.hidden', '', 'x'.repeat(65), 'sp ace']) {
      expect(await storeError(store.upload([file('ACME-E-MIB.txt', acme('ACME-E-MIB', { arc: 6 }))], { group: bad }), 400)).toContain(
        `source group '${bad}' is not allowed`,
      );
    }
    expect(readdirSync(o.sourceDir).sort()).toEqual(['common', 'lab_2.x-y']);
  });

  it('upload checks: traversal or hidden names 400, wrong extension 415, oversized 413, empty or repeated 400, nothing written', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    const ok = file('ACME-F-MIB.txt', acme('ACME-F-MIB', { arc: 7 }));
    for (const name of ['../evil.txt', '..', 'a/b.txt', 'a\\b.txt', '.hidden.txt', ''])
      expect(await storeError(store.upload([ok, file(name, 'x')]), 400)).toContain('escapes the MIB store or is hidden');
    for (const name of ['IF-MIB.exe', 'x.json', 'x.mib.gz'])
      expect(await storeError(store.upload([ok, file(name, 'x')]), 415)).toContain('must end in .mib, .txt or .my');
    expect(await storeError(store.upload([ok, file('big.mib', Buffer.alloc(MIB_MAX_FILE_BYTES + 1, 32))]), 413)).toBe(
      `big.mib is ${MIB_MAX_FILE_BYTES + 1} bytes; a MIB source may have at most ${MIB_MAX_FILE_BYTES}`,
    );
    expect(await storeError(store.upload([ok, file('empty.txt', '')]), 400)).toBe('empty.txt is empty');
    expect(await storeError(store.upload([ok, ok]), 400)).toBe('ACME-F-MIB.txt is given twice in one upload');
    expect(await storeError(store.upload([]), 400)).toContain('no files');
    expect(await storeError(store.validate([file('../x.txt', 'x')]), 400)).toContain('escapes');
    expect(existsSync(o.sourceDir)).toBe(false);
    // Upper-case extensions and no extension are MIB sources too.
    expect((await store.upload([file('ACME-F-MIB.TXT', ok.data), file('ACME-G-MIB', acme('ACME-G-MIB', { arc: 8 }))])).compiled).toEqual([
      'ACME-F-MIB',
      'ACME-G-MIB',
    ]);
  });

  it('changes are serialised: concurrent uploads both land; onChange fires once per compile', async () => {
    const store = await MibStore.open(dirs());
    let changes = 0;
    const off = store.onChange(() => changes++);
    const [r1, r2] = await Promise.all([
      store.upload([file('ACME-H-MIB.txt', acme('ACME-H-MIB', { arc: 9 }))], { group: 'g1' }),
      store.upload([file('ACME-I-MIB.txt', acme('ACME-I-MIB', { arc: 10 }))], { group: 'g2' }),
    ]);
    expect(r1.compiled).toEqual(['ACME-H-MIB']);
    expect(r2.compiled).toEqual(['ACME-I-MIB']);
    expect(store.status().mibs).toEqual(expect.arrayContaining(['ACME-H-MIB', 'ACME-I-MIB']));
    expect(changes).toBe(2);
    expect(store.summary()).toEqual({ active: 39, failed: 0, shadowed: 0, groups: 3, compiled_at: store.status().compiled_at });
    off();
    await store.reload();
    expect(changes).toBe(2);
  });
});

describe('MibStore: shadowing (docs/mibs.md: uploaded beats bundled; same rank: newer LAST-UPDATED; tie: first given, groups by name)', () => {
  const S = (arc: number, lastUpdated: string) => acme('ACME-S-MIB', { arc, lastUpdated });
  const oidOf = (store: MibStore) => store.index().toNumeric('ACME-S-MIB::acmeSValue')!.oid;

  it('two user groups: a tie goes to the group first by name (not the upload order); the newer LAST-UPDATED wins; 2-digit years are 19xx', async () => {
    const store = await MibStore.open(dirs());
    expect((await store.upload([file('ACME-S-MIB.txt', S(11, '202001010000Z'))], { group: 'zeta' })).results).toEqual({ 'ACME-S-MIB': 'compiled' });
    // Same date, uploaded later into alpha: alpha sorts first and wins.
    const tie = await store.upload([file('ACME-S-MIB.txt', S(12, '202001010000Z'))], { group: 'alpha' });
    expect(tie.results).toEqual({ 'ACME-S-MIB': 'compiled' });
    expect(oidOf(store)).toBe('1.3.6.1.4.1.424242.12.1');
    expect(row(store, 'zeta/ACME-S-MIB.txt')).toEqual([
      expect.objectContaining({
        status: 'shadowed',
        module: 'ACME-S-MIB',
        last_updated: '202001010000Z',
        shadowed_by: { path: 'alpha/ACME-S-MIB.txt', group: 'alpha' },
      }),
    ]);
    expect(row(store, 'alpha/ACME-S-MIB.txt')).toEqual([expect.objectContaining({ status: 'active', last_updated: '202001010000Z' })]);
    expect(store.status().mibs.filter((m) => m === 'ACME-S-MIB')).toHaveLength(1);
    expect(store.summary().shadowed).toBe(1);
    // A newer zeta wins although zeta sorts last.
    const newer = await store.upload([file('ACME-S-MIB.txt', S(13, '202101010000Z'))], { group: 'zeta' });
    expect(newer.results).toEqual({ 'ACME-S-MIB': 'compiled' });
    expect(oidOf(store)).toBe('1.3.6.1.4.1.424242.13.1');
    expect(row(store, 'alpha/ACME-S-MIB.txt')[0]).toMatchObject({ status: 'shadowed', shadowed_by: { path: 'zeta/ACME-S-MIB.txt', group: 'zeta' } });
    // Re-uploading the loser reports it shadowed, with the winner.
    expect((await store.upload([file('ACME-S-MIB.txt', S(12, '202001010000Z'))], { group: 'alpha' })).results).toEqual({
      'ACME-S-MIB': 'shadowed by zeta/ACME-S-MIB.txt',
    });
    // "9912310000Z" is 1999: older than 2000 although it sorts after it as a string...
    await store.upload([file('ACME-S-MIB.txt', S(14, '9912310000Z'))], { group: 'alpha' });
    await store.upload([file('ACME-S-MIB.txt', S(15, '200001010000Z'))], { group: 'zeta' });
    expect(oidOf(store)).toBe('1.3.6.1.4.1.424242.15.1');
    // ... and newer than 1998.
    await store.upload([file('ACME-S-MIB.txt', S(16, '199801010000Z'))], { group: 'zeta' });
    expect(oidOf(store)).toBe('1.3.6.1.4.1.424242.14.1');
    expect(row(store, 'zeta/ACME-S-MIB.txt')[0]).toMatchObject({
      status: 'shadowed',
      last_updated: '199801010000Z',
      shadowed_by: { path: 'alpha/ACME-S-MIB.txt', group: 'alpha' },
    });
    expect(store.status().source_groups.filter((g) => !g.bundled)).toEqual([
      { group: 'alpha', bundled: false, files: 1, modules: 1, active: 1, shadowed: 0, failed: 0, size_bytes: Buffer.byteLength(S(14, '9912310000Z')) },
      { group: 'zeta', bundled: false, files: 1, modules: 1, active: 0, shadowed: 1, failed: 0, size_bytes: Buffer.byteLength(S(16, '199801010000Z')) },
    ]);
  });

  it('uploaded beats bundled whatever the dates; between bundled directories the newer wins, on a tie the configured directory; imports resolve against the winner', async () => {
    const IF = readFileSync(join(PRODUCT_MIB_DIR, 'IF-MIB.txt'), 'utf8');
    expect(IF).toContain('LAST-UPDATED "200006140000Z"');
    const ifVariant = (lastUpdated: string, marker: string, arc: number) =>
      IF.replace('LAST-UPDATED "200006140000Z"', `LAST-UPDATED "${lastUpdated}"`).replace(
        /\nEND\s*$/,
        `\n${marker} OBJECT-TYPE\n    SYNTAX Integer32\n    MAX-ACCESS read-only\n    STATUS current\n    DESCRIPTION "marker"\n    ::= { ifMIBObjects ${arc} }\nEND\n`,
      );
    const extra = tempDir('svc-bundled-');
    // Same date as the product's copy: the configured directory (given first) wins the tie.
    writeFileSync(join(extra, 'IF-MIB.txt'), ifVariant('200006140000Z', 'ifBundledMarker', 4241));
    let store = await MibStore.open(dirs([extra]));
    expect(row(store, 'bundled-1/IF-MIB.txt')[0]).toMatchObject({ status: 'active', bundled: true });
    expect(row(store, 'bundled/IF-MIB.txt')[0]).toMatchObject({ status: 'shadowed', shadowed_by: { path: 'bundled-1/IF-MIB.txt', group: 'bundled-1' } });
    // An older configured copy loses to the product's newer one.
    writeFileSync(join(extra, 'IF-MIB.txt'), ifVariant('199901010000Z', 'ifBundledMarker', 4241));
    const o = dirs([extra]);
    store = await MibStore.open(o);
    expect(row(store, 'bundled-1/IF-MIB.txt')[0]).toMatchObject({
      status: 'shadowed',
      last_updated: '199901010000Z',
      shadowed_by: { path: 'bundled/IF-MIB.txt', group: 'bundled' },
    });
    expect(store.index().toNumeric('IF-MIB::ifBundledMarker')).toBeNull();
    // An upload older than both still wins (rank), and both bundled rows name it.
    const user = ifVariant('198001010000Z', 'ifUserMarker', 4242);
    const dep = acme('ACME-IFUSER-MIB', { arc: 20, imports: ['ifUserMarker FROM IF-MIB'], body: 'acmeIfuserAlias OBJECT IDENTIFIER ::= { ifUserMarker 1 }\n' });
    const r = await store.upload([file('IF-MIB.txt', user), file('ACME-IFUSER-MIB.txt', dep)], { group: 'vendor' });
    expect(r.results).toEqual({ 'IF-MIB': 'compiled', 'ACME-IFUSER-MIB': 'compiled' });
    expect(store.compiled('IF-MIB')!.module.file).toBe('vendor/IF-MIB.txt');
    for (const p of ['bundled/IF-MIB.txt', 'bundled-1/IF-MIB.txt'])
      expect(row(store, p)[0]).toMatchObject({ status: 'shadowed', bundled: true, shadowed_by: { path: 'vendor/IF-MIB.txt', group: 'vendor' } });
    expect(row(store, 'vendor/IF-MIB.txt')[0]).toMatchObject({ status: 'active', bundled: false, last_updated: '198001010000Z' });
    const want = netSnmpOid({ 'IF-MIB.txt': user, 'ACME-IFUSER-MIB.txt': dep }, 'ACME-IFUSER-MIB::acmeIfuserAlias');
    expect('.' + store.index().toNumeric('ACME-IFUSER-MIB::acmeIfuserAlias')!.oid).toBe(want);
    expect(want).toBe('.1.3.6.1.2.1.31.1.4242.1');
    // Bundled modules importing IF-MIB still compile against the upload.
    expect(store.status().errors).toEqual([]);
    expect(store.status().source_groups).toEqual([
      {
        group: 'vendor',
        bundled: false,
        files: 2,
        modules: 2,
        active: 2,
        shadowed: 0,
        failed: 0,
        size_bytes: Buffer.byteLength(user) + Buffer.byteLength(dep),
      },
      { group: 'bundled', bundled: true, files: 37, modules: 37, active: 36, shadowed: 1, failed: 0, size_bytes: expect.any(Number) },
      { group: 'bundled-1', bundled: true, files: 1, modules: 1, active: 0, shadowed: 1, failed: 0, size_bytes: statSync(join(extra, 'IF-MIB.txt')).size },
    ]);
    expect(store.status().mibs.filter((m) => m === 'IF-MIB')).toHaveLength(1);
    // Deleting the upload brings the product's copy back.
    await store.deleteFiles(['vendor/IF-MIB.txt']);
    expect(row(store, 'bundled/IF-MIB.txt')[0]!.status).toBe('active');
    expect(store.status().errors.map((f) => f.module)).toEqual(['ACME-IFUSER-MIB']);
  });
});

describe('MibStore: validate and reload', () => {
  it('validate reports would_compile, would_fail, missing, would_shadow, would_be_shadowed and replaces, and writes nothing', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    await store.upload([file('ACME-S-MIB.txt', acme('ACME-S-MIB', { arc: 30, lastUpdated: '202301010000Z' }))], { group: 'lab' });
    const before = { status: store.status(), sources: snapshot(o.sourceDir), compiled: snapshot(o.compiledDir) };
    const IF = readFileSync(join(PRODUCT_MIB_DIR, 'IF-MIB.txt'));
    const v = await store.validate(
      [
        file('IF-MIB.txt', IF),
        file('ACME-S-MIB.txt', acme('ACME-S-MIB', { arc: 31, lastUpdated: '202201010000Z' })),
        file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt')),
        file('NEEDS-MISSING-MIB.txt', fixture('NEEDS-MISSING-MIB.txt')),
        file('ACME-J-MIB.txt', acme('ACME-J-MIB', { arc: 32 })),
      ],
      { group: 'lab' },
    );
    expect(v.group).toBe('lab');
    // The new ACME-S-MIB replaces the stored lab/ACME-S-MIB.txt (older, but the stored copy is left out).
    expect(v.would_compile.sort()).toEqual(['ACME-J-MIB', 'ACME-S-MIB', 'IF-MIB']);
    expect(v.would_fail.map((f) => [f.module, f.path])).toEqual(
      expect.arrayContaining([
        ['BROKEN-MIB', 'lab/BROKEN-MIB.txt'],
        ['NEEDS-MISSING-MIB', 'lab/NEEDS-MISSING-MIB.txt'],
      ]),
    );
    expect(v.would_fail).toHaveLength(2);
    expect(v.missing).toEqual(['ACME-NOT-THERE-MIB']);
    expect(v.would_shadow).toEqual([{ module: 'IF-MIB', path: 'bundled/IF-MIB.txt', group: 'bundled' }]);
    // Replacing lab/ACME-S-MIB.txt itself is not shadowing: the stored copy is left out of the trial.
    expect(v.would_be_shadowed).toEqual([]);
    expect(v.files.map((f) => [f.name, f.path, f.modules, f.replaces])).toEqual([
      ['IF-MIB.txt', 'lab/IF-MIB.txt', ['IF-MIB'], false],
      ['ACME-S-MIB.txt', 'lab/ACME-S-MIB.txt', ['ACME-S-MIB'], true],
      ['BROKEN-MIB.txt', 'lab/BROKEN-MIB.txt', ['BROKEN-MIB'], false],
      ['NEEDS-MISSING-MIB.txt', 'lab/NEEDS-MISSING-MIB.txt', ['NEEDS-MISSING-MIB'], false],
      ['ACME-J-MIB.txt', 'lab/ACME-J-MIB.txt', ['ACME-J-MIB'], false],
    ]);
    expect(v.files[2]!.errors).toContainEqual(expect.objectContaining({ token: ']', line: 27 }));
    expect(v.files[2]!.size_bytes).toBe(fixture('BROKEN-MIB.txt').length);
    // Into another group the older copy loses to the stored one.
    const other = await store.validate([file('ACME-S-MIB.txt', acme('ACME-S-MIB', { arc: 31, lastUpdated: '202201010000Z' }))], { group: 'aaa' });
    expect(other.would_be_shadowed).toEqual([{ module: 'ACME-S-MIB', by: { path: 'lab/ACME-S-MIB.txt', group: 'lab' } }]);
    expect(other.would_compile).toEqual([]);
    expect(other.would_shadow).toEqual([]);
    // Partial mode: the broken module would compile.
    expect((await store.validate([file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt'))], { mode: 'partial' })).would_compile).toEqual(['BROKEN-MIB']);
    expect(await storeError(store.validate([file('x.txt', 'x')], { group: 'bundled' }), 400)).toContain('not allowed');
    // A tie (same LAST-UPDATED) is decided as the upload will: aaa sorts before lab and wins.
    const tieText = acme('ACME-S-MIB', { arc: 33, lastUpdated: '202301010000Z' });
    const tie = await store.validate([file('ACME-S-MIB.txt', tieText)], { group: 'aaa' });
    expect(tie).toMatchObject({
      would_compile: ['ACME-S-MIB'],
      would_shadow: [{ module: 'ACME-S-MIB', path: 'lab/ACME-S-MIB.txt', group: 'lab' }],
      would_be_shadowed: [],
    });
    expect((await store.validate([file('ACME-S-MIB.txt', tieText)], { group: 'mmm' })).would_be_shadowed).toEqual([
      { module: 'ACME-S-MIB', by: { path: 'lab/ACME-S-MIB.txt', group: 'lab' } },
    ]);
    expect(store.status()).toEqual(before.status);
    expect(snapshot(o.sourceDir)).toEqual(before.sources);
    expect(snapshot(o.compiledDir)).toEqual(before.compiled);
    expect((await store.upload([file('ACME-S-MIB.txt', tieText)], { group: 'aaa' })).results).toEqual({ 'ACME-S-MIB': 'compiled' });
    expect((await store.upload([file('ACME-S-MIB.txt', tieText)], { group: 'mmm' })).results).toEqual({ 'ACME-S-MIB': 'shadowed by aaa/ACME-S-MIB.txt' });
  });

  it('reload recompiles from disk: files added, changed and removed outside the API; reload(partial) marks every upload partial', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    await store.upload([file('ACME-K-MIB.txt', acme('ACME-K-MIB', { arc: 40 }))]);
    const first = store.status().compiled_at;
    mkdirSync(join(o.sourceDir, 'dropped'), { recursive: true });
    writeFileSync(join(o.sourceDir, 'dropped', 'ACME-L-MIB.txt'), acme('ACME-L-MIB', { arc: 41 }));
    writeFileSync(join(o.sourceDir, 'dropped', 'BROKEN-MIB.txt'), fixture('BROKEN-MIB.txt'));
    writeFileSync(join(o.sourceDir, 'common', 'ACME-K-MIB.txt'), acme('ACME-K-MIB', { arc: 42 }));
    // Not a source: hidden, wrong extension, a folder named like the reserved groups.
    writeFileSync(join(o.sourceDir, 'dropped', '.ACME-X-MIB.txt'), acme('ACME-X-MIB', { arc: 43 }));
    writeFileSync(join(o.sourceDir, 'dropped', 'ACME-Y-MIB.bak'), acme('ACME-Y-MIB', { arc: 44 }));
    mkdirSync(join(o.sourceDir, 'bundled'));
    writeFileSync(join(o.sourceDir, 'bundled', 'ACME-Z-MIB.txt'), acme('ACME-Z-MIB', { arc: 45 }));
    expect(store.status().mibs).not.toContain('ACME-L-MIB');
    const r = await store.reload();
    expect(r.compiled).toEqual(expect.arrayContaining(['ACME-K-MIB', 'ACME-L-MIB', ...PRODUCT]));
    expect(r.results['ACME-L-MIB']).toBe('compiled');
    expect(r.results['BROKEN-MIB']).toMatch(/^failed: dropped\/BROKEN-MIB.txt:27:27 /);
    expect(r.failed.map((f) => f.module)).toEqual(['BROKEN-MIB']);
    expect(store.status().compiled_at).not.toBe(first);
    expect(store.index().toNumeric('ACME-K-MIB::acmeKValue')!.oid).toBe('1.3.6.1.4.1.424242.42.1');
    expect(store.status().mibs).not.toEqual(expect.arrayContaining(['ACME-X-MIB']));
    expect(store.status().mibs.filter((m) => /ACME-[XYZ]-MIB/.test(m))).toEqual([]);
    const partial = await store.reload('partial');
    expect(partial.results['BROKEN-MIB']).toBe('compiled');
    expect(JSON.parse(readFileSync(join(o.sourceDir, '.svc-modes.json'), 'utf8'))).toEqual({
      'common/ACME-K-MIB.txt': 'partial',
      'dropped/ACME-L-MIB.txt': 'partial',
      'dropped/BROKEN-MIB.txt': 'partial',
    });
    expect((await store.reload('full')).results['BROKEN-MIB']).toMatch(/^failed: /);
    rmSync(join(o.sourceDir, 'dropped', 'ACME-L-MIB.txt'));
    expect((await store.reload()).compiled).not.toContain('ACME-L-MIB');
    expect(store.status().mibs).not.toContain('ACME-L-MIB');
    // A module in several files: its result is the winner's, not 'shadowed'.
    await store.upload([file('IF-MIB.txt', readFileSync(join(PRODUCT_MIB_DIR, 'IF-MIB.txt')))], { group: 'vendor' });
    const all = await store.reload();
    expect(all.results['IF-MIB']).toBe('compiled');
    expect(all.shadowed).toEqual([
      expect.objectContaining({ module: 'IF-MIB', file: 'bundled/IF-MIB.txt', by: expect.objectContaining({ file: 'vendor/IF-MIB.txt' }) }),
    ]);
  });
});

describe('MibStore: persistence in SVC_MIB_DIR', () => {
  it('one JSON per active module plus _manifest.json; a second store on the same dirs loads them (same status); a changed, added or removed source recompiles', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    const a = acme('ACME-P-MIB', { arc: 50 });
    await store.upload([file('ACME-P-MIB.txt', a), file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt'))], { group: 'persist' });
    const files = readdirSync(o.compiledDir).sort();
    expect(files).toEqual(['_manifest.json', ...[...PRODUCT, 'ACME-P-MIB'].map((m) => `${m}.json`)].sort());
    const json = JSON.parse(readFileSync(join(o.compiledDir, 'ACME-P-MIB.json'), 'utf8'));
    expect(json).toMatchObject({ format: 1, module: 'ACME-P-MIB', file: 'persist/ACME-P-MIB.txt', group: 'persist', smi: 'v2' });
    expect(json.nodes.find((n: { name: string }) => n.name === 'acmePValue').oid).toBe(netSnmpOid({ 'ACME-P-MIB.txt': a }, 'ACME-P-MIB::acmePValue').slice(1));
    expect(readFileSync(join(o.compiledDir, 'ACME-P-MIB.json'), 'utf8')).toBe(store.compiled('ACME-P-MIB')!.json);
    const manifest = JSON.parse(readFileSync(join(o.compiledDir, '_manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ format: 1, compiled_at: store.status().compiled_at, fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(manifest.failed.map((f: { module: string }) => f.module)).toEqual(['BROKEN-MIB']);

    // Same dirs: loaded, not recompiled (same compiled_at), the same status to the byte.
    const again = await MibStore.open(o);
    expect(again.status()).toEqual(store.status());
    expect(again.index().toNumeric('ACME-P-MIB::acmePValue')).toEqual(store.index().toNumeric('ACME-P-MIB::acmePValue'));
    expect(again.compiled('IF-MIB')!.json).toBe(store.compiled('IF-MIB')!.json);

    // A source changed behind the store's back: the next start recompiles.
    await elapse(20); // a later modification time
    writeFileSync(join(o.sourceDir, 'persist', 'ACME-P-MIB.txt'), acme('ACME-P-MIB', { arc: 51 }));
    const changed = await MibStore.open(o);
    expect(changed.status().compiled_at).not.toBe(store.status().compiled_at);
    expect(changed.index().toNumeric('ACME-P-MIB::acmePValue')!.oid).toBe('1.3.6.1.4.1.424242.51.1');
    expect(JSON.parse(readFileSync(join(o.compiledDir, 'ACME-P-MIB.json'), 'utf8')).nodes.find((n: { name: string }) => n.name === 'acmePValue').oid).toBe(
      '1.3.6.1.4.1.424242.51.1',
    );
    // Added...
    writeFileSync(join(o.sourceDir, 'persist', 'ACME-Q-MIB.txt'), acme('ACME-Q-MIB', { arc: 52 }));
    const added = await MibStore.open(o);
    expect(added.status().mibs).toContain('ACME-Q-MIB');
    expect(existsSync(join(o.compiledDir, 'ACME-Q-MIB.json'))).toBe(true);
    // ... and removed: its JSON goes too.
    rmSync(join(o.sourceDir, 'persist', 'ACME-Q-MIB.txt'));
    const removed = await MibStore.open(o);
    expect(removed.status().mibs).not.toContain('ACME-Q-MIB');
    expect(existsSync(join(o.compiledDir, 'ACME-Q-MIB.json'))).toBe(false);
    const stable = removed.status().compiled_at;

    // A compiled file of another format version, or missing, means a recompile (not a crash).
    writeFileSync(join(o.compiledDir, 'ACME-P-MIB.json'), JSON.stringify({ ...json, format: 999 }));
    const reformatted = await MibStore.open(o);
    expect(reformatted.status().compiled_at).not.toBe(stable);
    expect(JSON.parse(readFileSync(join(o.compiledDir, 'ACME-P-MIB.json'), 'utf8')).format).toBe(1);
    rmSync(join(o.compiledDir, 'IF-MIB.json'));
    const missing = await MibStore.open(o);
    expect(missing.status().mibs).toContain('IF-MIB');
    expect(existsSync(join(o.compiledDir, 'IF-MIB.json'))).toBe(true);
  });

  it('an unwritable SVC_MIB_DIR: the store still works in memory', async () => {
    const o = dirs();
    writeFileSync(join(o.root, 'plainfile'), 'x');
    const warnings: string[] = [];
    const store = await MibStore.open({
      ...o,
      compiledDir: join(o.root, 'plainfile', 'sub'),
      log: { info: () => undefined, warn: (_o, m) => warnings.push(m) },
    });
    expect(store.status().mibs).toHaveLength(37);
    expect((await store.upload([file('ACME-R-MIB.txt', acme('ACME-R-MIB', { arc: 53 }))])).compiled).toEqual(['ACME-R-MIB']);
    // Worded by the actual error, once (the same failure at the next change is not repeated).
    expect(warnings).toEqual([expect.stringContaining('cannot persist the compiled MIB modules in SVC_MIB_DIR (ENOTDIR)')]);
  });
});

describe('MibStore: fetching dependencies', () => {
  let server: Server;
  let base: string;
  const requests: string[] = [];
  let closedPort: number;
  beforeAll(async () => {
    // The "remote repository": a real HTTP server with the corpus, by module name.
    server = createServer((req, res) => {
      requests.push(req.url!);
      const m = /^\/(mibs|alt|wrong|boom)\/([A-Za-z0-9-]+?)(\.my)?$/.exec(req.url!);
      const path = m && join(CORPUS, `${m[2]}.txt`);
      if (m?.[1] === 'boom') return res.writeHead(500).end('no');
      if (!path || !existsSync(path)) return res.writeHead(404).end('not here');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(m[1] === 'wrong' ? acme('SOMETHING-ELSE-MIB', { arc: 99 }) : readFileSync(path));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
  });
  afterAll(() => new Promise((r) => server.close(r)));

  const v6 = acme('ACME-V6-MIB', { arc: 60, imports: ['ipv6IcmpMIB FROM IPV6-ICMP-MIB'], body: 'acmeV6Under OBJECT IDENTIFIER ::= { ipv6IcmpMIB 99 }\n' });
  const trace = acme('ACME-TR-MIB', {
    arc: 61,
    imports: ['traceRouteMIB FROM DISMAN-TRACEROUTE-MIB'],
    body: 'acmeTrUnder OBJECT IDENTIFIER ::= { traceRouteMIB 99 }\n',
  });

  it('from a bundled sub-directory, transitively, into the group of the module needing it', async () => {
    const lib = tempDir('svc-mib-lib-');
    mkdirSync(join(lib, 'vendor', 'disman', 'deeper'), { recursive: true });
    writeFileSync(join(lib, 'vendor', 'disman', 'DISMAN-TRACEROUTE-MIB.txt'), readFileSync(join(CORPUS, 'DISMAN-TRACEROUTE-MIB.txt')));
    writeFileSync(join(lib, 'vendor', 'disman', 'deeper', 'ping.my'), readFileSync(join(CORPUS, 'DISMAN-PING-MIB.txt')));
    const o = dirs([lib]);
    const store = await MibStore.open(o);
    // Sub-directories are a library, not sources.
    expect(store.status().mibs).not.toContain('DISMAN-PING-MIB');
    const up = await store.upload([file('ACME-TR-MIB.txt', trace)], { group: 'ops' });
    expect(up.failed[0]!.missing).toEqual(['DISMAN-TRACEROUTE-MIB']);
    const r = await store.fetchDependencies();
    expect(r.fetched).toEqual([
      { module: 'DISMAN-TRACEROUTE-MIB', from: join(lib, 'vendor', 'disman', 'DISMAN-TRACEROUTE-MIB.txt'), path: 'ops/DISMAN-TRACEROUTE-MIB.txt' },
      { module: 'DISMAN-PING-MIB', from: join(lib, 'vendor', 'disman', 'deeper', 'ping.my'), path: 'ops/ping.my' },
    ]);
    expect(r.still_missing).toEqual([]);
    expect(r.compiled.sort()).toEqual(['DISMAN-PING-MIB', 'DISMAN-TRACEROUTE-MIB']);
    expect(r.files).toEqual(['ops/DISMAN-TRACEROUTE-MIB.txt', 'ops/ping.my']);
    expect(store.status().errors).toEqual([]);
    expect(readFileSync(join(o.sourceDir, 'ops', 'ping.my'))).toEqual(readFileSync(join(CORPUS, 'DISMAN-PING-MIB.txt')));
    expect('.' + store.index().toNumeric('ACME-TR-MIB::acmeTrUnder')!.oid).toBe(netSnmpOid({ 'ACME-TR-MIB.txt': trace }, 'ACME-TR-MIB::acmeTrUnder'));
    // Nothing more to fetch: a no-op.
    expect(await store.fetchDependencies()).toMatchObject({ fetched: [], still_missing: [], files: [] });
  });

  it('from an HTTP repository (<url>/<MODULE>), transitively, byte for byte', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    await store.upload([file('ACME-V6-MIB.txt', v6), file('ACME-TR-MIB.txt', trace)]);
    requests.length = 0;
    const r = await store.fetchDependencies({ repositoryUrl: `${base}/mibs/` });
    // IPV6-ICMP-MIB imports IPV6-MIB, which imports IPV6-TC: three rounds.
    expect(r.fetched.map((f) => [f.module, f.path, f.from]).sort()).toEqual([
      ['DISMAN-PING-MIB', 'common/DISMAN-PING-MIB.mib', `${base}/mibs/DISMAN-PING-MIB`],
      ['DISMAN-TRACEROUTE-MIB', 'common/DISMAN-TRACEROUTE-MIB.mib', `${base}/mibs/DISMAN-TRACEROUTE-MIB`],
      ['IPV6-ICMP-MIB', 'common/IPV6-ICMP-MIB.mib', `${base}/mibs/IPV6-ICMP-MIB`],
      ['IPV6-MIB', 'common/IPV6-MIB.mib', `${base}/mibs/IPV6-MIB`],
      ['IPV6-TC', 'common/IPV6-TC.mib', `${base}/mibs/IPV6-TC`],
    ]);
    // One request per module, in rounds: what the uploads import first, then what those import.
    expect(requests.slice(0, 2).sort()).toEqual(['/mibs/DISMAN-TRACEROUTE-MIB', '/mibs/IPV6-ICMP-MIB']);
    expect(requests.slice(2, 4).sort()).toEqual(['/mibs/DISMAN-PING-MIB', '/mibs/IPV6-MIB']);
    expect(requests.slice(4)).toEqual(['/mibs/IPV6-TC']);
    expect(r.still_missing).toEqual([]);
    expect(store.status().errors).toEqual([]);
    for (const m of ['IPV6-ICMP-MIB', 'IPV6-MIB', 'IPV6-TC'])
      expect(readFileSync(join(o.sourceDir, 'common', `${m}.mib`))).toEqual(readFileSync(join(CORPUS, `${m}.txt`)));
    expect('.' + store.index().toNumeric('ACME-V6-MIB::acmeV6Under')!.oid).toBe(netSnmpOid({ 'ACME-V6-MIB.txt': v6 }, 'ACME-V6-MIB::acmeV6Under'));
  });

  it('a URL with @mib@; still_missing with the reason: not configured, unreachable, 404, not the module, an HTTP error', async () => {
    const store = await MibStore.open(dirs());
    await store.upload([file('ACME-V6-MIB.txt', v6), file('NEEDS-MISSING-MIB.txt', fixture('NEEDS-MISSING-MIB.txt'))], { group: 'g' });
    const none = await store.fetchDependencies();
    expect(none.fetched).toEqual([]);
    expect(none.still_missing).toEqual([
      {
        module: 'IPV6-ICMP-MIB',
        needed_by: ['ACME-V6-MIB'],
        reason: expect.stringMatching(/^IPV6-ICMP-MIB: not found in the bundled sources \(.*\) and no MIB repository URL is configured$/),
      },
      { module: 'ACME-NOT-THERE-MIB', needed_by: ['NEEDS-MISSING-MIB'], reason: expect.stringContaining('no MIB repository URL is configured') },
    ]);
    const down = await store.fetchDependencies({ repositoryUrl: `http://127.0.0.1:${closedPort}/mibs` });
    expect(down.still_missing.map((s) => s.reason)).toEqual([
      `IPV6-ICMP-MIB: the MIB repository http://127.0.0.1:${closedPort}/mibs/IPV6-ICMP-MIB cannot be reached (ECONNREFUSED); check mib_repository_url and the network`,
      `ACME-NOT-THERE-MIB: the MIB repository http://127.0.0.1:${closedPort}/mibs/ACME-NOT-THERE-MIB cannot be reached (ECONNREFUSED); check mib_repository_url and the network`,
    ]);
    expect((await store.fetchDependencies({ repositoryUrl: `${base}/wrong` })).still_missing[0]!.reason).toBe(
      `IPV6-ICMP-MIB: ${base}/wrong/IPV6-ICMP-MIB did not return a MIB module named IPV6-ICMP-MIB`,
    );
    expect((await store.fetchDependencies({ repositoryUrl: `${base}/boom` })).still_missing[0]!.reason).toBe(
      `IPV6-ICMP-MIB: the MIB repository answered 500 for ${base}/boom/IPV6-ICMP-MIB`,
    );
    expect(
      store
        .status()
        .errors.map((f) => f.module)
        .sort(),
    ).toEqual(['ACME-V6-MIB', 'NEEDS-MISSING-MIB']);
    requests.length = 0;
    const r = await store.fetchDependencies({ repositoryUrl: `${base}/alt/@mib@.my` });
    expect(requests).toEqual(['/alt/IPV6-ICMP-MIB.my', '/alt/ACME-NOT-THERE-MIB.my', '/alt/IPV6-MIB.my', '/alt/IPV6-TC.my']);
    expect(r.fetched.map((f) => f.path)).toEqual(['g/IPV6-ICMP-MIB.mib', 'g/IPV6-MIB.mib', 'g/IPV6-TC.mib']);
    expect(r.still_missing).toEqual([
      {
        module: 'ACME-NOT-THERE-MIB',
        needed_by: ['NEEDS-MISSING-MIB'],
        reason: `ACME-NOT-THERE-MIB: not found in the bundled sources or at ${base}/alt/ACME-NOT-THERE-MIB.my`,
      },
    ]);
    expect(store.status().errors.map((f) => f.module)).toEqual(['NEEDS-MISSING-MIB']);
  });

  it('fetchModules (the daemon download): stored and compiled; 404 when found nowhere, 502 when the repository fails; a module already stored in the group is replaced', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    const r = await store.fetchModules(['IPV6-TC', 'NOPE-MIB'], { repositoryUrl: `${base}/mibs`, group: 'dl' });
    expect(r.compiled).toEqual(['IPV6-TC']);
    expect(r.files).toEqual(['dl/IPV6-TC.mib']);
    expect(r.not_found).toEqual(['NOPE-MIB']);
    expect(await storeError(store.fetchModules(['NOPE-MIB'], { repositoryUrl: `${base}/mibs` }), 404)).toContain('NOPE-MIB: not found');
    expect(await storeError(store.fetchModules(['IPV6-MIB'], { repositoryUrl: `http://127.0.0.1:${closedPort}` }), 502)).toContain('cannot be reached');
    expect(await storeError(store.fetchModules(['IPV6-MIB'], {}), 404)).toContain('no MIB repository URL is configured');
    expect(await storeError(store.fetchModules(['IPV6-MIB'], { group: 'bundled' }), 400)).toContain('not allowed');
    const twice = await store.fetchModules(['IPV6-TC'], { repositoryUrl: `${base}/mibs`, group: 'dl' });
    // A module already in the group is replaced in place, not stored a second time.
    expect(twice.files).toEqual(['dl/IPV6-TC.mib']);
    expect(twice.results).toEqual({ 'IPV6-TC': 'compiled' });
    expect(store.status().source_inventory.filter((r) => r.module === 'IPV6-TC' && r.group === 'dl')).toHaveLength(1);
    // The product's library answers first: no request for a bundled module.
    requests.length = 0;
    expect((await store.fetchModules(['TCP-MIB'], { repositoryUrl: `${base}/mibs`, group: 'dl' })).files).toEqual(['dl/TCP-MIB.txt']);
    expect(requests).toEqual([]);
  });

  it('a repository URL with user:password: sent as Basic authorization; never echoed in an error, a reason or `from`', async () => {
    const auth = `Basic ${Buffer.from('ops:p@ss/w0rd').toString('base64')}`;
    const seen: (string | undefined)[] = [];
    const guarded = createServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.headers.authorization !== auth) return res.writeHead(401).end('who?');
      res.writeHead(200).end(acme('ACME-CRED-MIB', { arc: 81 }));
    });
    await new Promise<void>((r) => guarded.listen(0, '127.0.0.1', r));
    try {
      const port = (guarded.address() as AddressInfo).port;
      const store = await MibStore.open(dirs());
      const r = await store.fetchModules(['ACME-CRED-MIB'], { repositoryUrl: `http://ops:p%40ss%2Fw0rd@127.0.0.1:${port}/mibs` });
      expect(r.compiled).toEqual(['ACME-CRED-MIB']);
      expect(seen).toEqual([auth]);
      const secret = /w0rd|p%40ss|p@ss/;
      const closed = `http://ops:p%40ss%2Fw0rd@127.0.0.1:${closedPort}/mibs`;
      const down = await storeError(store.fetchModules(['ACME-CRED2-MIB'], { repositoryUrl: closed }), 502);
      expect(down).toBe(
        `ACME-CRED2-MIB: the MIB repository http://***@127.0.0.1:${closedPort}/mibs/ACME-CRED2-MIB cannot be reached (ECONNREFUSED); check mib_repository_url and the network`,
      );
      await store.upload([file('ACME-NEEDS-CRED-MIB.txt', acme('ACME-NEEDS-CRED-MIB', { arc: 82, imports: ['acmeCred3MIB FROM ACME-CRED3-MIB'] }))]);
      const f = await store.fetchDependencies({ repositoryUrl: closed });
      expect(f.still_missing).toEqual([
        { module: 'ACME-CRED3-MIB', needed_by: ['ACME-NEEDS-CRED-MIB'], reason: expect.stringContaining('http://***@127.0.0.1') },
      ]);
      expect(JSON.stringify(f)).not.toMatch(secret);
      const wrong = await store.fetchDependencies({ repositoryUrl: `http://ops:wrong-w0rd@127.0.0.1:${port}/mibs/@mib@` });
      expect(wrong.still_missing[0]!.reason).toBe(`ACME-CRED3-MIB: the MIB repository answered 401 for http://***@127.0.0.1:${port}/mibs/ACME-CRED3-MIB`);
      expect((await store.fetchDependencies({ repositoryUrl: 'http://ops:w0rd@[::1' })).still_missing[0]!.reason).toBe(
        'ACME-CRED3-MIB: the MIB repository URL is not a valid URL; check mib_repository_url',
      );
    } finally {
      await new Promise((r) => guarded.close(r));
    }
  });
});

describe('MibStore: reading and deleting sources', () => {
  it('readSources gives the stored bytes (bundled too); unknown 404; traversal 400', async () => {
    const store = await MibStore.open(dirs());
    const a = acme('ACME-T-MIB', { arc: 70 });
    await store.upload([file('ACME-T-MIB.txt', a)], { group: 'rd' });
    const [one, two] = store.readSources(['rd/ACME-T-MIB.txt', 'bundled/IF-MIB.txt']);
    expect(one).toEqual({ path: 'rd/ACME-T-MIB.txt', name: 'ACME-T-MIB.txt', data: Buffer.from(a) });
    expect(two!.data).toEqual(readFileSync(join(PRODUCT_MIB_DIR, 'IF-MIB.txt')));
    expect(await storeError(() => store.readSources(['rd/NOPE.txt']), 404)).toContain('no MIB source rd/NOPE.txt');
    for (const p of ['../etc/passwd', 'rd/../../x', '/etc/passwd', 'rd/x/y.txt', 'rd', 'rd\\x.txt', 'rd/..', './rd/ACME-T-MIB.txt'])
      expect(await storeError(() => store.readSources([p]), 400)).toContain('escapes the MIB store');
  });

  it('deleteFiles: removes and recompiles, lists not_found, drops an emptied group and its JSON; a bundled path is 403 and deletes nothing', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    await store.upload([file('ACME-U-MIB.txt', acme('ACME-U-MIB', { arc: 71 })), file('ACME-W-MIB.txt', acme('ACME-W-MIB', { arc: 72 }))], { group: 'del' });
    await store.upload([file('ACME-X2-MIB.txt', acme('ACME-X2-MIB', { arc: 73 }))], { group: 'keep' });
    expect(await storeError(store.deleteFiles(['del/ACME-U-MIB.txt', 'bundled/IF-MIB.txt']), 403)).toContain(
      'bundled/IF-MIB.txt is a read-only bundled source',
    );
    // Nothing of the batch was removed.
    expect(existsSync(join(o.sourceDir, 'del', 'ACME-U-MIB.txt'))).toBe(true);
    expect(store.status().mibs).toContain('ACME-U-MIB');
    expect(await storeError(store.deleteFiles(['del/ACME-U-MIB.txt', '../x']), 400)).toContain('escapes');
    expect(existsSync(join(o.sourceDir, 'del', 'ACME-U-MIB.txt'))).toBe(true);
    const r = await store.deleteFiles(['del/ACME-U-MIB.txt', 'del/NOPE.txt', 'nogroup/x.txt']);
    expect(r.files).toEqual(['del/ACME-U-MIB.txt']);
    expect(r.not_found).toEqual(['del/NOPE.txt', 'nogroup/x.txt']);
    expect(store.status().mibs).not.toContain('ACME-U-MIB');
    expect(existsSync(join(o.compiledDir, 'ACME-U-MIB.json'))).toBe(false);
    expect(group(store, 'del')).toMatchObject({ files: 1, active: 1 });
    await store.deleteFiles(['del/ACME-W-MIB.txt']);
    expect(existsSync(join(o.sourceDir, 'del'))).toBe(false);
    expect(group(store, 'del')).toBeUndefined();
    expect(group(store, 'keep')).toMatchObject({ files: 1 });
    // Only not-found paths: no recompile.
    const at = store.status().compiled_at;
    expect((await store.deleteFiles(['del/ACME-W-MIB.txt'])).not_found).toEqual(['del/ACME-W-MIB.txt']);
    expect(store.status().compiled_at).toBe(at);
  });
});

describe('MibStore: names, files, modes and counts', () => {
  const two = acme('ACME-A-MIB', { arc: 71 }) + acme('ACME-B-MIB', { arc: 72 });

  it('fetchModules replaces a stored file only when it defines nothing but the module; else it stores a fresh file and the other modules stay', async () => {
    const lib = tempDir('svc-mib-lib-');
    mkdirSync(join(lib, 'vendor'));
    writeFileSync(join(lib, 'vendor', 'ACME-A-MIB.txt'), acme('ACME-A-MIB', { arc: 71, lastUpdated: '202602010000Z' }));
    const o = dirs([lib]);
    const store = await MibStore.open(o);
    await store.upload([file('both.mib', two)]);
    const r = await store.fetchModules(['ACME-A-MIB']);
    expect(r.files).toEqual(['common/ACME-A-MIB.txt']);
    expect(readFileSync(join(o.sourceDir, 'common', 'both.mib'), 'utf8')).toBe(two);
    expect(store.status().mibs).toEqual(expect.arrayContaining(['ACME-A-MIB', 'ACME-B-MIB']));
    // The fetched copy is newer (LAST-UPDATED) and wins; the file's own copy is shadowed, not lost.
    expect(row(store, 'common/both.mib').map((x) => [x.module, x.status])).toEqual([
      ['ACME-A-MIB', 'shadowed'],
      ['ACME-B-MIB', 'active'],
    ]);
    // Again: the file that holds nothing but ACME-A-MIB is the one replaced.
    expect((await store.fetchModules(['ACME-A-MIB'])).files).toEqual(['common/ACME-A-MIB.txt']);
    expect(readdirSync(join(o.sourceDir, 'common')).sort()).toEqual(['ACME-A-MIB.txt', 'both.mib']);
  });

  it('two library files of the same name fetched in one call are stored under two names (download and fetch-dependencies)', async () => {
    const lib = tempDir('svc-mib-lib-');
    for (const [d, m, arc] of [
      ['v1', 'ACME-VA-MIB', 73],
      ['v2', 'ACME-VB-MIB', 74],
    ] as const) {
      mkdirSync(join(lib, d));
      writeFileSync(join(lib, d, 'VENDOR.txt'), acme(m, { arc }));
    }
    const store = await MibStore.open(dirs([lib]));
    const r = await store.fetchModules(['ACME-VA-MIB', 'ACME-VB-MIB']);
    expect(r.files).toEqual(['common/VENDOR.txt', 'common/VENDOR-2.txt']);
    expect(r.compiled).toEqual(['ACME-VA-MIB', 'ACME-VB-MIB']);

    const other = await MibStore.open(dirs([lib]));
    await other.upload([file('NEEDS.txt', acme('ACME-NEEDS-MIB', { arc: 75, imports: ['acmeVaMIB FROM ACME-VA-MIB', 'acmeVbMIB FROM ACME-VB-MIB'] }))], {
      group: 'needs',
    });
    const f = await other.fetchDependencies();
    expect(f.fetched.map((x) => [x.module, x.path])).toEqual([
      ['ACME-VA-MIB', 'needs/VENDOR.txt'],
      ['ACME-VB-MIB', 'needs/VENDOR-2.txt'],
    ]);
    expect(f.still_missing).toEqual([]);
    expect(other.status().errors).toEqual([]);
  });

  it('a fetch whose second write fails still compiles the file written before it, then reports the failure', async () => {
    const lib = tempDir('svc-mib-lib-');
    mkdirSync(join(lib, 'vendor'));
    writeFileSync(join(lib, 'vendor', 'A.txt'), acme('ACME-FA-MIB', { arc: 91 }));
    writeFileSync(join(lib, 'vendor', 'B.txt'), acme('ACME-FB-MIB', { arc: 92 }));
    const o = dirs([lib]);
    const store = await MibStore.open(o);
    // A folder where B.txt would go: its write fails (EISDIR).
    mkdirSync(join(o.sourceDir, 'common', 'B.txt'), { recursive: true });
    await expect(store.fetchModules(['ACME-FA-MIB', 'ACME-FB-MIB'])).rejects.toThrow(/cannot store B\.txt/);
    expect(store.status().active_modules).toContain('ACME-FA-MIB');
    expect(store.status().source_inventory.map((r) => r.path)).toContain('common/A.txt');
  });

  it('a library source starting with a UTF-8 byte order mark is found by fetch-dependencies and by the daemon download', async () => {
    const lib = tempDir('svc-mib-lib-');
    mkdirSync(join(lib, 'vendor'));
    writeFileSync(join(lib, 'vendor', 'bom.mib'), '\uFEFF' + acme('ACME-BOM-MIB', { arc: 83 }).replace(/^-- test module\n/, ''));
    const store = await MibStore.open(dirs([lib]));
    await store.upload([file('NEEDS-BOM.txt', acme('ACME-NEEDS-BOM-MIB', { arc: 84, imports: ['acmeBomMIB FROM ACME-BOM-MIB'] }))]);
    const f = await store.fetchDependencies();
    expect(f.fetched.map((x) => [x.module, x.path])).toEqual([['ACME-BOM-MIB', 'common/bom.mib']]);
    expect(store.status().errors).toEqual([]);
    const other = await MibStore.open(dirs([lib]));
    expect((await other.fetchModules(['ACME-BOM-MIB'])).compiled).toEqual(['ACME-BOM-MIB']);
  });

  it('upload names: control characters and names over 200 bytes of UTF-8 are 400 before anything is written; a failed write takes back what the upload added', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    const n1 = acme('ACME-N1-MIB', { arc: 85 });
    const n2 = acme('ACME-N2-MIB', { arc: 86 });
    await store.upload([file('ACME-N0-MIB.mib', acme('ACME-N0-MIB', { arc: 87 }))]);
    const before = snapshot(o.sourceDir);
    expect(await storeError(store.upload([file('a\x07b.mib', n1)]), 400)).toBe('file name "a\\u0007b.mib" has control characters: give a plain file name');
    expect(await storeError(store.upload([file('ACME-N1-MIB.mib', n1), file(`${'日'.repeat(100)}.mib`, n2)]), 400)).toContain(
      'is 304 bytes in UTF-8; a MIB source name may have at most 200',
    );
    expect(snapshot(o.sourceDir)).toEqual(before);
    expect((await store.upload([file(`${'日'.repeat(65)}.mib`, n2)])).compiled).toEqual(['ACME-N2-MIB']);
    // A folder where the 2nd file goes: that write fails (503) and the 1st file goes again.
    mkdirSync(join(o.sourceDir, 'common', 'ACME-N3-MIB.mib'));
    expect(await storeError(store.upload([file('ACME-N1-MIB.mib', n1), file('ACME-N3-MIB.mib', n1)]), 503)).toContain('cannot store ACME-N3-MIB.mib');
    expect(existsSync(join(o.sourceDir, 'common', 'ACME-N1-MIB.mib'))).toBe(false);
    expect(store.status().mibs).not.toContain('ACME-N1-MIB');
  });

  it('a module name over 64 characters fails with a clear error; persisting is per module, worded by its own error, and goes on for later changes', async () => {
    const o = dirs();
    const warnings: string[] = [];
    const store = await MibStore.open({ ...o, log: { info: () => undefined, warn: (_o, m) => warnings.push(m) } });
    const long = `L${'X'.repeat(300)}-MIB`;
    const r = await store.upload([file('long.mib', acme(long, { arc: 76 })), file('ACME-OK-MIB.mib', acme('ACME-OK-MIB', { arc: 77 }))]);
    expect(r.compiled).toEqual(['ACME-OK-MIB']);
    expect(r.results[long]).toBe('failed: common/long.mib:2:1 module name is 305 characters long; SMI names have at most 64 (RFC 2578)');
    expect(warnings).toEqual([]);
    expect(existsSync(join(o.compiledDir, 'ACME-OK-MIB.json'))).toBe(true);
    // One module's JSON cannot be written (a folder in its place): that module is named, the rest is persisted.
    mkdirSync(join(o.compiledDir, 'ACME-W-MIB.json'));
    await store.upload([file('ACME-W-MIB.mib', acme('ACME-W-MIB', { arc: 78 }))]);
    expect(warnings).toEqual([expect.stringMatching(/^cannot write ACME-W-MIB\.json in SVC_MIB_DIR \(EISDIR\)/)]);
    mkdirSync(join(o.compiledDir, 'ACME-V-MIB.json'));
    await store.upload([file('ACME-V-MIB.mib', acme('ACME-V-MIB', { arc: 79 }))]);
    expect(warnings).toEqual([expect.stringContaining('ACME-W-MIB.json'), expect.stringMatching(/^cannot write ACME-V-MIB\.json in SVC_MIB_DIR \(EISDIR\)/)]);
    // No manifest while a module is missing: the next start compiles again instead of loading the rest without it.
    expect(existsSync(join(o.compiledDir, '_manifest.json'))).toBe(false);
    expect(existsSync(join(o.compiledDir, 'ACME-OK-MIB.json'))).toBe(true);
    const warnings2: string[] = [];
    const reopened = await MibStore.open({ ...o, log: { info: () => undefined, warn: (_o, m) => warnings2.push(m) } });
    expect(reopened.status().active_modules).toEqual(expect.arrayContaining(['ACME-OK-MIB', 'ACME-W-MIB', 'ACME-V-MIB']));
  });

  it('compile modes: the partial mode of a file that is gone does not count; a reload with a mode resets every recorded mode', async () => {
    const o = dirs();
    const store = await MibStore.open(o);
    const common = join(o.sourceDir, 'common');
    const modes = () => JSON.parse(readFileSync(join(o.sourceDir, '.svc-modes.json'), 'utf8'));
    await store.upload([file('P.txt', fixture('BROKEN-MIB.txt'))], { mode: 'partial' });
    // Replaced outside the API by a file of another name, then a reload in full mode: BROKEN-MIB fails.
    rmSync(join(common, 'P.txt'));
    writeFileSync(join(common, 'Q.txt'), fixture('BROKEN-MIB.txt'));
    expect((await store.reload('full')).failed.map((f) => f.module)).toEqual(['BROKEN-MIB']);
    expect(modes()).toEqual({});
    // Removed outside the API, then an upload in full mode: compiled in full mode.
    await store.upload([file('R.txt', acme('ACME-R2-MIB', { arc: 88 }))], { mode: 'partial' });
    rmSync(join(common, 'R.txt'));
    expect((await store.upload([file('Q.txt', fixture('BROKEN-MIB.txt'))])).compiled).toEqual([]);
    expect(modes()).toEqual({});
  });

  it('deleteFiles lists a path given twice once', async () => {
    const store = await MibStore.open(dirs());
    await store.upload([file('ACME-D2-MIB.txt', acme('ACME-D2-MIB', { arc: 89 }))]);
    const r = await store.deleteFiles(['common/ACME-D2-MIB.txt', 'common/ACME-D2-MIB.txt', 'common/NOPE.txt', 'common/NOPE.txt']);
    expect(r.files).toEqual(['common/ACME-D2-MIB.txt']);
    expect(r.not_found).toEqual(['common/NOPE.txt']);
  });

  it('onCounts: every change reports what it counts (uploads, compiled, failed), also the daemon download and deletes', async () => {
    const lib = tempDir('svc-mib-lib-');
    mkdirSync(join(lib, 'vendor'));
    writeFileSync(join(lib, 'vendor', 'ACME-CT-MIB.txt'), acme('ACME-CT-MIB', { arc: 90 }));
    const store = await MibStore.open(dirs([lib]));
    const seen: object[] = [];
    const off = store.onCounts((c) => seen.push(c));
    await store.upload([file('ACME-CU-MIB.txt', acme('ACME-CU-MIB', { arc: 91 })), file('BROKEN-MIB.txt', fixture('BROKEN-MIB.txt'))]);
    await store.fetchModules(['ACME-CT-MIB']);
    await store.deleteFiles(['common/BROKEN-MIB.txt']);
    await store.reload();
    off();
    await store.reload();
    expect(seen).toEqual([
      { uploads: 2, compiled: 1, failed: 1 },
      { uploads: 0, compiled: 1, failed: 0 },
      { uploads: 0, compiled: 0, failed: 0 },
      { uploads: 0, compiled: 39, failed: 0 },
    ]);
  });
});
