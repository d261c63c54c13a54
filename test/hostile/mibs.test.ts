// Hostile MIB sources (issue 28, finding 2): a module of 100,000 chained OBJECT IDENTIFIERs made
// compiledToJson run out of memory (each node carries its whole OID: quadratic JSON), answered 500
// to the console's upload, and stopped every later start. Each shape is now a compile error of its
// own module within the limits (MibLimits, SVC_MIB_MAX_*), the upload is refused with nothing
// stored, and a start with such a source in SVC_MIB_SOURCE_DIR serves the other modules.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileMibs, type MibSource } from '../../src/mib/compiler.js';
import { PRODUCT_MIB_DIR } from '../../src/mib/store.js';
import { detailOnly, loggedIn } from '../console/helpers.js';
import { serveChild, testMibEnv } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { ACME } from '../mib/helpers.js';

/** The reproduction (its python3 one-liner): `n` OIDs, each under the one before. */
const deepMib = (n: number) => {
  const lines = ['DEEP-MIB DEFINITIONS ::= BEGIN', 'IMPORTS enterprises FROM SNMPv2-SMI;', 'd0 OBJECT IDENTIFIER ::= { enterprises 4343 }'];
  for (let i = 1; i < n; i++) lines.push(`d${i} OBJECT IDENTIFIER ::= { d${i - 1} 1 }`);
  return lines.join('\n') + '\nEND\n';
};

const SMI: MibSource[] = ['SNMPv2-SMI', 'SNMPv2-TC'].map((m) => ({
  file: `${m}.txt`,
  text: readFileSync(join(PRODUCT_MIB_DIR, `${m}.txt`), 'utf8'),
  group: 'bundled',
}));

/** Compiles `text` (with the SMI) and gives its failure, the time taken and the RSS growth. */
function compileHostile(text: string, file = 'HOSTILE.mib') {
  const rss = process.memoryUsage().rss;
  const t0 = performance.now();
  const r = compileMibs([...SMI, { file, text }]);
  const ms = performance.now() - t0;
  return { r, ms, rssGrowth: process.memoryUsage().rss - rss, failure: r.failed.find((f) => f.file === file) };
}

const MB = 1 << 20;

describe('hostile MIB sources: the compiler', () => {
  it('the 100,000-OID chain (4 MB) is a compile error of DEEP-MIB naming the limit, within 10 s and 500 MB', () => {
    const text = deepMib(100_000);
    expect(text.length).toBeGreaterThan(4_000_000);
    const { r, ms, rssGrowth, failure } = compileHostile(text, 'deep.mib');
    expect(failure).toMatchObject({ module: 'DEEP-MIB', limit: 'SVC_MIB_MAX_SYMBOLS' });
    expect(failure!.errors[0]!.message).toContain('more than 20000 definitions (SVC_MIB_MAX_SYMBOLS=20000)');
    expect(r.modules.map((m) => m.module)).toEqual(['SNMPv2-SMI', 'SNMPv2-TC']);
    expect(ms).toBeLessThan(10_000);
    expect(rssGrowth).toBeLessThan(500 * MB);
  });

  it('an OID deeper than 128 sub-identifiers fails its module (SVC_MIB_MAX_OID_DEPTH), with the diagnostics capped', () => {
    const { failure, ms } = compileHostile(deepMib(5000));
    expect(failure?.limit).toBe('SVC_MIB_MAX_OID_DEPTH');
    // enterprises is 6 arcs (1.3.6.1.4.1), d0 7: d122 is the first with 129
    expect(failure!.errors[0]).toMatchObject({ token: 'd122', message: expect.stringContaining('more than 128 sub-identifiers') });
    expect(failure!.errors.length).toBeLessThanOrEqual(102);
    expect(failure!.errors.at(-1)!.message).toMatch(/^\d+ more errors not shown/);
    expect(ms).toBeLessThan(10_000);
  });

  it('a chain written child first (each OID defined by the next line) is cut, not a stack overflow', () => {
    const n = 8000;
    const lines = ['REV-MIB DEFINITIONS ::= BEGIN'];
    for (let i = n; i >= 1; i--) lines.push(`r${i} OBJECT IDENTIFIER ::= { r${i - 1} 1 }`);
    lines.push('r0 OBJECT IDENTIFIER ::= { iso 3 }', 'END');
    const { failure, ms } = compileHostile(lines.join('\n'));
    expect(failure?.limit).toBe('SVC_MIB_MAX_OID_DEPTH');
    expect(failure!.errors[0]!.message).toContain('more than 128 nested definitions');
    expect(ms).toBeLessThan(10_000);
  });

  it('nesting (parentheses, SEQUENCEs, a chain of types) is an error, not a stack overflow', () => {
    const head = 'NEST-MIB DEFINITIONS ::= BEGIN\n';
    const types = ['T0 ::= INTEGER'];
    for (let i = 1; i <= 8000; i++) types.push(`T${i} ::= T${i - 1}`);
    for (const body of [`T ::= INTEGER ${'('.repeat(200_000)}`, `T ::= ${'SEQUENCE { a '.repeat(50_000)}`, types.reverse().join('\n')]) {
      const { failure } = compileHostile(`${head}${body}\nEND\n`);
      expect(failure?.errors[0]!.message).toMatch(/nested more than 32 levels deep|more than 32 nested types/);
      expect(failure!.limit).toBe('SMI nesting (32 levels)');
    }
  });

  it('a shared enumeration repeated in every node is stopped at the compiled size limit (SVC_MIB_MAX_COMPILED_BYTES)', () => {
    const enums = Array.from({ length: 12_000 }, (_, i) => `v${i}(${i})`).join(', ');
    const objects = Array.from(
      { length: 300 },
      (_, i) => `o${i} OBJECT-TYPE SYNTAX Big MAX-ACCESS read-only STATUS current DESCRIPTION "x" ::= { big ${i + 1} }`,
    );
    const text = `BIG-MIB DEFINITIONS ::= BEGIN
IMPORTS OBJECT-TYPE, enterprises FROM SNMPv2-SMI TEXTUAL-CONVENTION FROM SNMPv2-TC;
big OBJECT IDENTIFIER ::= { enterprises 4344 }
Big ::= TEXTUAL-CONVENTION STATUS current DESCRIPTION "e" SYNTAX INTEGER { ${enums} }
${objects.join('\n')}
END
`;
    expect(text.length).toBeLessThan(300_000);
    const { failure, rssGrowth, ms } = compileHostile(text);
    expect(failure?.limit).toBe('SVC_MIB_MAX_COMPILED_BYTES');
    expect(failure!.errors[0]!.message).toContain(`larger than ${32 * MB} characters of JSON`);
    expect(ms).toBeLessThan(10_000);
    expect(rssGrowth).toBeLessThan(500 * MB);
  });

  it('inputs that were quadratic (header search over `A {`, thousands of missing imports) take seconds at most', () => {
    const t0 = performance.now();
    const headers = compileMibs([{ file: 'braces.mib', text: 'A { '.repeat(150_000) }]);
    expect(headers.failed[0]!.errors[0]!.message).toContain('expected a module header');
    const imports = compileHostile(`IMP-MIB DEFINITIONS ::= BEGIN\nIMPORTS ${Array.from({ length: 60_000 }, (_, i) => `a FROM M${i}`).join(' ')};\nEND\n`);
    expect(imports.failure!.missing).toHaveLength(60_000);
    expect(imports.failure!.errors.length).toBeLessThanOrEqual(101);
    expect(performance.now() - t0).toBeLessThan(10_000);
  });
});

describe('hostile MIB sources: upload and start', () => {
  it("the console's upload refuses the 30,000-line chain with a 422 {detail}, stores nothing, and later uploads and reloads work", async () => {
    const a = await loggedIn();
    const post = async (name: string, text: string) => {
      const fd = new FormData();
      fd.append('files[]', new Blob([text]), name);
      const res = await fetch(a.c.url + '/api/mibs/upload', { method: 'POST', headers: { 'x-auth-token': a.token }, body: fd });
      return { status: res.status, body: (await res.json()) as any };
    };
    const detail = detailOnly(await post('deep.mib', deepMib(30_000)), 422);
    expect(detail).toContain('nothing was stored: common/deep.mib (DEEP-MIB): module DEEP-MIB has more than 20000 definitions');
    expect(detail).toContain('raise SVC_MIB_MAX_SYMBOLS');
    const sources = join(a.dir, 'mib-sources');
    expect(existsSync(sources) ? readdirSync(sources, { recursive: true }).filter((f) => String(f).includes('deep')) : []).toEqual([]);

    const ok = await post('ACME-MIB.txt', ACME);
    expect(ok.status).toBe(200);
    expect(ok.body.compiled).toEqual(['ACME-MIB']);
    const reload = await a.api('POST', '/api/mibs/reload');
    expect(reload.status).toBe(200);
    expect(reload.body.compiled).toContain('ACME-MIB');
  });

  it('an export whose notification members repeat a large description hundreds of times is refused with a 422 {detail}; the objects export still works', async () => {
    const a = await loggedIn();
    const text = `AMP-MIB DEFINITIONS ::= BEGIN
IMPORTS OBJECT-TYPE, NOTIFICATION-TYPE, Integer32, enterprises FROM SNMPv2-SMI;
amp OBJECT IDENTIFIER ::= { enterprises 4345 }
big OBJECT-TYPE SYNTAX Integer32 MAX-ACCESS read-only STATUS current DESCRIPTION "${'x'.repeat(100_000)}" ::= { amp 1 }
ampNote NOTIFICATION-TYPE OBJECTS { ${Array(700).fill('big').join(', ')} } STATUS current DESCRIPTION "n" ::= { amp 2 }
END
`;
    const fd = new FormData();
    fd.append('files[]', new Blob([text]), 'AMP-MIB.txt');
    const up = await fetch(a.c.url + '/api/mibs/upload', { method: 'POST', headers: { 'x-auth-token': a.token }, body: fd });
    expect(((await up.json()) as { compiled: string[] }).compiled).toEqual(['AMP-MIB']);
    const detail = detailOnly(await a.api('POST', '/api/mibs/export', { export_type: 'notifications', modules: ['AMP-MIB'] }), 422);
    expect(detail).toContain('narrow it with modules, notifications or source_groups');
    const objects = await a.api('POST', '/api/mibs/export', { export_type: 'objects', modules: ['AMP-MIB'] });
    expect(objects.status).toBe(200);
    expect(objects.body.objects.map((o: { name: string }) => o.name)).toEqual(['big']);
  });

  it('`svc serve` with the 100,000-OID chain in SVC_MIB_SOURCE_DIR starts, serves, and lists the other modules; the console shows it failed', async () => {
    const dir = tempDir('svc-hostile-mibs-');
    const mib = testMibEnv(dir);
    const common = join(mib.SVC_MIB_SOURCE_DIR!, 'common');
    mkdirSync(common, { recursive: true });
    writeFileSync(join(common, 'deep.mib'), deepMib(100_000));
    writeFileSync(join(common, 'ACME-MIB.txt'), ACME);
    // (serveChild waits at most 20 s for /api/health)
    const { url } = await serveChild({
      ...mib,
      SVC_DB_PATH: join(dir, 'daemon.db'),
      SVC_STATE_DIR: join(dir, 'daemon-state'),
      SVC_PIPELINE_DIR: join(dir, 'pipelines'),
    });
    const listed = (await (await fetch(url + '/api/mibs')).json()) as { name: string }[];
    const names = listed.map((m) => m.name);
    expect(names).toContain('ACME-MIB');
    expect(names).toContain('SNMPv2-SMI');
    expect(names).not.toContain('DEEP-MIB');

    // The same sources under the console: the failure is listed with its reason, and logged.
    const c = await loggedIn({}, dir);
    const status = (await c.api('GET', '/api/mibs/status')).body;
    const failed = status.failed_modules.find((f: { module: string }) => f.module === 'DEEP-MIB');
    expect(failed).toMatchObject({ path: 'common/deep.mib', limit: 'SVC_MIB_MAX_SYMBOLS' });
    expect(status.source_inventory).toContainEqual(expect.objectContaining({ path: 'common/deep.mib', module: 'DEEP-MIB', status: 'failed' }));
  });
});
