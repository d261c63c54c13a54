// Bad input: syntax errors located like libsmi's smilint locates them, missing and failed imports
// named, and every other module still compiles (failure isolation, any input order).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileMibs, type MibSource } from '../../src/mib/compiler.js';
import { MibIndex } from '../../src/mib/mib-index.js';
import { parseMib } from '../../src/mib/parser.js';
import { CORPUS, FIXTURES, readSources, rng, shuffle, translate } from './helpers.js';

const ERRORS = join(FIXTURES, 'errors');
const corpus = readSources(CORPUS);
const bad = readSources(ERRORS);

/** smilint's findings for one file: [line, message]. */
function smilint(file: string): [number, string][] {
  const r = spawnSync('smilint', ['-l', '1', file], { encoding: 'utf8', env: { ...process.env, SMIPATH: `${CORPUS}:${ERRORS}` } });
  const out = `${r.stdout}${r.stderr}`;
  return [...out.matchAll(/^[^:\n]+:(\d+): (.*)$/gm)].map((m) => [Number(m[1]), m[2]!]);
}

describe('bad MIBs', () => {
  const all = compileMibs(shuffle([...corpus, ...bad], 7));
  const failed = new Map(all.failed.map((f) => [f.module, f]));

  it('reports a syntax error with file, line, column and token, where smilint reports it', () => {
    const file = join(ERRORS, 'BROKEN-MIB.txt');
    const [[line, msg]] = smilint(file) as [[number, string]];
    expect(msg).toContain("unexpected ']'");
    const f = failed.get('BROKEN-MIB')!;
    expect(f.file).toBe(file);
    expect(f.errors[0]).toMatchObject({ severity: 'error', file, line, token: ']', module: 'BROKEN-MIB' });
    expect(f.errors[0]!.column).toBe(27);
    expect(f.errors[0]!.message).toBe("unexpected ']' in an OBJECT IDENTIFIER value (expected a name, a number or '}')");
  });

  it('reports a character SMI does not use with its line, like smilint', () => {
    const file = join(ERRORS, 'BAD-CHAR-MIB.txt');
    const [[line, msg]] = smilint(file) as [[number, string]];
    expect(msg).toContain('unexpected character');
    expect(failed.get('BAD-CHAR-MIB')!.errors[0]).toMatchObject({ file, line, column: 26, token: '@' });
  });

  it('names the missing module, at the import line smilint names', () => {
    const file = join(ERRORS, 'NEEDS-MISSING-MIB.txt');
    const [[line, msg]] = smilint(file) as [[number, string]];
    expect(msg).toContain('ACME-NOT-THERE-MIB');
    const f = failed.get('NEEDS-MISSING-MIB')!;
    expect(f.missing).toEqual(['ACME-NOT-THERE-MIB']);
    expect(f.errors).toContainEqual(expect.objectContaining({ line, token: 'ACME-NOT-THERE-MIB', message: 'imports from missing module ACME-NOT-THERE-MIB' }));
  });

  it('fails a module that imports from a failed one, naming it', () => {
    const f = failed.get('USES-BROKEN-MIB')!;
    expect(f.missing).toEqual([]);
    expect(f.failedImports).toEqual(['BROKEN-MIB']);
  });

  it('still compiles every other module, identically', () => {
    expect([...failed.keys()].sort()).toEqual(['BAD-CHAR-MIB', 'BROKEN-MIB', 'NEEDS-MISSING-MIB', 'USES-BROKEN-MIB']);
    const clean = compileMibs(corpus);
    expect(JSON.stringify(all.modules)).toBe(JSON.stringify(clean.modules));
  });

  it('partial mode keeps what resolves around a syntax error', () => {
    const r = compileMibs([...corpus, ...bad], { mode: 'partial' });
    const m = r.modules.find((x) => x.module === 'BROKEN-MIB')!;
    expect(m.nodes.map((n) => n.name).sort()).toEqual(['alsoGood', 'brokenMIB', 'goodOne']);
    expect(m.diagnostics).toContainEqual(expect.objectContaining({ line: 27, token: ']' }));
    const index = new MibIndex(r.modules);
    // snmptranslate gives up on the whole module, so check the arithmetic against the parent it knows.
    const [want] = translate([CORPUS], ['-On'], ['SNMPv2-SMI::enterprises.424243.3']);
    expect('.' + index.toNumeric('BROKEN-MIB::alsoGood')!.oid).toBe(want);
    // The module under the broken one resolves too in partial mode.
    expect(index.toNumeric('USES-BROKEN-MIB::usesBroken')!.oid).toBe('1.3.6.1.4.1.424243.9');
    // NEEDS-MISSING-MIB: the node resolves, its type does not (a warning names it).
    const nm = r.modules.find((x) => x.module === 'NEEDS-MISSING-MIB')!;
    expect(nm.nodes.find((n) => n.name === 'widgetCount')!.syntax!.base).toBe('unknown');
    expect(nm.diagnostics.map((d) => d.message)).toContainEqual(expect.stringContaining('AcmeWidget'));
  });

  it('reports one error per bad definition and resumes at the next one', () => {
    const text = `X-MIB DEFINITIONS ::= BEGIN
IMPORTS OBJECT-TYPE, Integer32, enterprises FROM SNMPv2-SMI;
a OBJECT-TYPE SYNTAX Integer32 MAX-ACCESS read-only STATUS current DESCRIPTION "a" ::= { enterprises 1 }
b OBJECT-TYPE SYNTAX Integer32 MAX-ACCES read-only STATUS current DESCRIPTION "b" ::= { enterprises 2 }
c OBJECT-TYPE SYNTAX Integer32 MAX-ACCESS read-only STATUS current DESCRIPTION "c" ::= { enterprises 3 }
d OBJECT-TYPE SYNTAX INTEGER { x(1), y(two) } MAX-ACCESS read-only STATUS current DESCRIPTION "d" ::= { enterprises 4 }
END
`;
    const r = parseMib(text, 'x.mib');
    const m = r.modules[0]!;
    expect(m.errors.map((e) => [e.line, e.column, e.token])).toEqual([
      [4, 32, 'MAX-ACCES'],
      [6, 40, 'two'],
    ]);
    expect(m.defs.map((d) => d.name)).toEqual(['a', 'c']);
  });

  it("reports a range bound written 'xyz'H or '12'B that is not such a number, as a syntax error of its definition", () => {
    const text = `X-MIB DEFINITIONS ::= BEGIN
IMPORTS OBJECT-TYPE, enterprises FROM SNMPv2-SMI;
a OBJECT-TYPE SYNTAX OCTET STRING (SIZE ('07must'H)) MAX-ACCESS read-only STATUS current DESCRIPTION "a" ::= { enterprises 1 }
b OBJECT-TYPE SYNTAX INTEGER ('0'B..'12'B) MAX-ACCESS read-only STATUS current DESCRIPTION "b" ::= { enterprises 2 }
c OBJECT-TYPE SYNTAX INTEGER ('0'B..'ff'H) MAX-ACCESS read-only STATUS current DESCRIPTION "c" ::= { enterprises 3 }
END
`;
    const m = parseMib(text, 'x.mib').modules[0]!;
    expect(m.errors.map((e) => [e.line, e.message])).toEqual([
      [3, "'07must'H is not a hexadecimal number"],
      [4, "'12'B is not a binary number"],
    ]);
    expect(m.defs.map((d) => d.name)).toEqual(['c']);
  });

  it('reads several modules from one file and reports a file with none', () => {
    const two = `A-MIB DEFINITIONS ::= BEGIN
IMPORTS enterprises FROM SNMPv2-SMI;
a OBJECT IDENTIFIER ::= { enterprises 11 }
END
B-MIB DEFINITIONS ::= BEGIN
IMPORTS a FROM A-MIB;
b OBJECT IDENTIFIER ::= { a 2 }
END
`;
    const r = compileMibs([...corpus, { file: 'two.mib', text: two }, { file: 'notes.txt', text: 'just some notes\n' }]);
    const idx = new MibIndex(r.modules);
    expect(idx.toNumeric('B-MIB::b')!.oid).toBe('1.3.6.1.4.1.11.2');
    expect(r.failed).toEqual([
      expect.objectContaining({
        module: null,
        file: 'notes.txt',
        errors: [expect.objectContaining({ line: 1, message: expect.stringContaining('module header') })],
      }),
    ]);
  });

  it('is not thrown by import cycles', () => {
    const a = `CYC-A DEFINITIONS ::= BEGIN
IMPORTS enterprises FROM SNMPv2-SMI cycB FROM CYC-B;
cycA OBJECT IDENTIFIER ::= { enterprises 77 }
cycA2 OBJECT IDENTIFIER ::= { cycB 1 }
END`;
    const b = `CYC-B DEFINITIONS ::= BEGIN
IMPORTS cycA FROM CYC-A;
cycB OBJECT IDENTIFIER ::= { cycA 5 }
END`;
    const r = compileMibs([{ file: 'a', text: a }, { file: 'b', text: b }, ...corpus]);
    expect(r.failed).toEqual([]);
    expect(new MibIndex(r.modules).toNumeric('CYC-A::cycA2')!.oid).toBe('1.3.6.1.4.1.77.5.1');
  });

  it('reports an OID that does not resolve, with the definition', () => {
    const text = `LOOP-MIB DEFINITIONS ::= BEGIN
IMPORTS enterprises FROM SNMPv2-SMI;
p OBJECT IDENTIFIER ::= { q 1 }
q OBJECT IDENTIFIER ::= { p 1 }
r OBJECT IDENTIFIER ::= { nowhere 1 }
END`;
    const r = compileMibs([{ file: 'loop.mib', text }, ...corpus]);
    const f = r.failed.find((x) => x.module === 'LOOP-MIB')!;
    expect(f.errors.map((e) => [e.line, e.token])).toEqual(
      expect.arrayContaining([
        [3, 'p'],
        [5, 'r'],
      ]),
    );
    expect(f.errors.find((e) => e.token === 'r')!.message).toContain("unknown parent 'nowhere'");
  });
});

describe('damaged sources (seeded random cuts and stray characters)', () => {
  const SEED = Number(process.env.SEED ?? Date.now() % 100000);
  it(`never throws, and every module that does not depend on the damaged one still compiles (seed ${SEED})`, () => {
    const clean = compileMibs(corpus);
    const importers = new Map<string, string[]>();
    for (const m of clean.modules) for (const i of m.imports) importers.set(i.module, [...(importers.get(i.module) ?? []), m.module]);
    const r = rng(SEED);
    for (let round = 0; round < 25; round++) {
      const victim = corpus[Math.floor(r() * corpus.length)]!;
      const at = Math.floor(r() * victim.text.length);
      const text = round % 2 ? victim.text.slice(0, at) : victim.text.slice(0, at) + '{}();"\'::=..@'[Math.floor(r() * 13)] + victim.text.slice(at);
      const name = clean.modules.find((m) => m.file === victim.file)!.module;
      const hit = new Set([name]);
      for (const m of hit) for (const x of importers.get(m) ?? []) hit.add(x);
      const out = compileMibs([...corpus.filter((x) => x !== victim), { file: victim.file, text }]);
      new MibIndex(out.modules).toSymbolic('1.3.6.1.2.1.2.2.1.10.3');
      const active = new Set(out.modules.map((m) => m.module));
      expect(
        clean.modules.map((m) => m.module).filter((m) => !hit.has(m) && !active.has(m)),
        `round ${round}: ${victim.file} at ${at}`,
      ).toEqual([]);
    }
  });
});

describe('shadowing (two sources of one module)', () => {
  const v = (date: string, arc: number): string => `DUP-MIB DEFINITIONS ::= BEGIN
IMPORTS MODULE-IDENTITY, enterprises FROM SNMPv2-SMI;
dupMIB MODULE-IDENTITY LAST-UPDATED "${date}" ORGANIZATION "o" CONTACT-INFO "c" DESCRIPTION "d" ::= { enterprises ${arc} }
END`;
  const smi: MibSource[] = corpus.filter((s) => s.file.endsWith('SNMPv2-SMI.txt'));

  it('prefers an uploaded group over a bundled one, whatever the dates', () => {
    const r = compileMibs([
      ...smi,
      { file: 'bundled/DUP-MIB', text: v('202601010000Z', 1), group: 'bundled' },
      { file: 'common/DUP-MIB', text: v('199901010000Z', 2), group: 'common' },
    ]);
    expect(r.modules.find((m) => m.module === 'DUP-MIB')!.group).toBe('common');
    expect(r.shadowed).toEqual([
      {
        module: 'DUP-MIB',
        file: 'bundled/DUP-MIB',
        group: 'bundled',
        lastUpdated: '202601010000Z',
        by: { file: 'common/DUP-MIB', group: 'common', lastUpdated: '199901010000Z' },
      },
    ]);
  });

  it('prefers the newer LAST-UPDATED within the same kind of group (2- and 4-digit years)', () => {
    const r = compileMibs([
      ...smi,
      { file: 'a/DUP-MIB', text: v('202401010000Z', 1), group: 'a' },
      { file: 'b/DUP-MIB', text: v('9901010000Z', 2), group: 'b' },
    ]);
    expect(new MibIndex(r.modules).toNumeric('DUP-MIB::dupMIB')!.oid).toBe('1.3.6.1.4.1.1');
    expect(r.shadowed.map((s) => s.file)).toEqual(['b/DUP-MIB']);
  });
});

describe('module names', () => {
  const snmpv2 = corpus.filter((s) => /SNMPv2-(SMI|TC|CONF)\.txt$/.test(s.file));
  const long = `L${'X'.repeat(70)}-MIB`;
  const mib = (name: string, body: string) => ({ file: `/x/${name}.mib`, text: `-- a test module\n  ${name} DEFINITIONS ::= BEGIN\n${body}\nEND\n` });
  const sources: MibSource[] = [
    ...snmpv2,
    mib(long, `IMPORTS enterprises FROM SNMPv2-SMI;\nlongRoot OBJECT IDENTIFIER ::= { enterprises 4242 }`),
    mib('USER-MIB', `IMPORTS longRoot FROM ${long};\nuserRoot OBJECT IDENTIFIER ::= { longRoot 1 }`),
  ];

  it('a module name over 64 characters fails in either mode, at its header; its importers fail in full mode', () => {
    for (const mode of ['full', 'partial'] as const) {
      const r = compileMibs(sources, { mode });
      const f = r.failed.find((x) => x.module === long)!;
      expect(f.errors[0]).toMatchObject({
        severity: 'error',
        line: 2,
        column: 3,
        token: long,
        message: `module name is ${long.length} characters long; SMI names have at most 64 (RFC 2578)`,
      });
      expect(r.modules.map((m) => m.module)).not.toContain(long);
      if (mode === 'full') expect(r.failed.find((x) => x.module === 'USER-MIB')?.failedImports).toEqual([long]);
    }
  });
});
