// Shared by the MIB tests: the net-snmp corpus (in a seeded random order) and batched calls to
// Debian's snmptranslate, the independent reference for every resolution the tests check.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { MibSource } from '../../src/mib/compiler.js';

/** The 78-module corpus: net-snmp's distributed MIB modules, in the repository (test/fixtures/mibs/README.md). */
export const CORPUS = process.env.SVC_TEST_MIB_CORPUS ?? resolve(import.meta.dirname, '../fixtures/mibs/net-snmp');
export const FIXTURES = join(import.meta.dirname, 'fixtures');

/** A small seeded PRNG (failures name their seed). */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffle<T>(xs: T[], seed: number): T[] {
  const r = rng(seed);
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

export function readSources(dir: string, group?: string): MibSource[] {
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.'))
    .map((f) => ({ file: join(dir, f), text: readFileSync(join(dir, f), 'utf8'), ...(group ? { group } : {}) }));
}

/**
 * snmptranslate over many OIDs, `batch` per call; one answer per input (null when it had none).
 * Each query is followed by a sentinel OID whose answer is known, so an error message (which goes
 * to stderr) cannot shift the answers.
 */
export function translate(dirs: string[], flags: string[], inputs: string[], batch = 500): (string | null)[] {
  const SENTINEL = 'SNMPv2-MIB::sysDescr.424242';
  const mark = snmptranslate(dirs, flags, [SENTINEL]).trim();
  const out: (string | null)[] = [];
  // snmptranslate stops at the first OID it cannot translate: that one gets null, the rest goes on.
  for (let i = 0; i < inputs.length; ) {
    const chunk = inputs.slice(i, i + batch);
    const text = snmptranslate(
      dirs,
      flags,
      chunk.flatMap((q) => [q, SENTINEL]),
    );
    let cur: string[] = [];
    let got = 0;
    for (const line of text.split('\n')) {
      if (line === mark) {
        out.push(cur.join('\n').trim() || null);
        cur = [];
        got++;
      } else cur.push(line);
    }
    if (got < chunk.length) {
      out.push(null);
      got++;
    }
    i += got;
  }
  return out;
}

/** One snmptranslate call with `-M dirs -m ALL`; its stdout (also when it exits non-zero). */
export function snmptranslate(dirs: string[], flags: string[], args: string[]): string {
  try {
    return execFileSync('snmptranslate', ['-M', dirs.join(':'), '-m', 'ALL', ...flags, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
    });
  } catch (e) {
    return (e as { stdout?: string }).stdout ?? '';
  }
}

/** `-Td` blocks by their first line (`MODULE::name`), parsed into clause -> text. */
export function details(dirs: string[], names: string[]): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  const blocks: string[][] = [];
  for (let i = 0; i < names.length; i += 300) {
    // A block starts with `MODULE::name` followed by `name MACRO` (descriptions may hold blank lines).
    const lines = snmptranslate(dirs, ['-Td'], names.slice(i, i + 300)).split('\n');
    for (let k = 0; k < lines.length; k++) {
      const m = /^\S+::(\S+)$/.exec(lines[k]!);
      if (m && lines[k + 1]?.startsWith(m[1]! + ' ')) blocks.push([]);
      blocks[blocks.length - 1]?.push(lines[k]!);
    }
  }
  for (const lines of blocks) {
    const rec: Record<string, string> = {};
    for (const l of lines.slice(2)) {
      const m = /^ {2}(?:-- )?(TEXTUAL CONVENTION|[A-Z][A-Z -]*?)(?:\t+| +)(.*)$/.exec(l);
      if (m) rec[m[1]!.trim()] = m[2]!.trim();
      else if (l.startsWith('::=')) rec['::='] = l.slice(3).trim();
    }
    out.set(lines[0]!, rec);
  }
  return out;
}

/**
 * A small SMIv2 module under enterprises.424242.<arc> with the object `<prefix>Value` (+ `body`),
 * where the prefix is the name in camel case without -MIB (ACME-S-MIB: acmeSMIB, acmeSValue). It
 * starts with a comment, so that the module header is found past one.
 */
export function acme(name: string, o: { arc: number; lastUpdated?: string; imports?: string[]; body?: string }): string {
  const p = name
    .replace(/-MIB$/, '')
    .toLowerCase()
    .replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
  return `-- test module
${name} DEFINITIONS ::= BEGIN

IMPORTS
        MODULE-IDENTITY, OBJECT-TYPE, Integer32, enterprises
                FROM SNMPv2-SMI${(o.imports ?? []).map((i) => `\n        ${i}`).join('')};

${p}MIB MODULE-IDENTITY
        LAST-UPDATED "${o.lastUpdated ?? '202601010000Z'}"
        ORGANIZATION "ACME"
        CONTACT-INFO "nobody"
        DESCRIPTION  "Test module ${name}."
        ::= { enterprises 424242 ${o.arc} }

${p}Value OBJECT-TYPE
        SYNTAX      Integer32
        MAX-ACCESS  read-only
        STATUS      current
        DESCRIPTION "A value."
        ::= { ${p}MIB 1 }
${o.body ?? ''}
END
`;
}

/** A small valid module (ACME-MIB::acmeTemp, enterprises 99999) for upload and sync tests. */
export const ACME = `ACME-MIB DEFINITIONS ::= BEGIN
IMPORTS MODULE-IDENTITY, OBJECT-TYPE, Integer32, enterprises FROM SNMPv2-SMI;
acme MODULE-IDENTITY
    LAST-UPDATED "202601010000Z"
    ORGANIZATION "Acme"
    CONTACT-INFO "noc@acme.example"
    DESCRIPTION "Test module."
    ::= { enterprises 99999 }
acmeTemp OBJECT-TYPE
    SYNTAX Integer32 (-40..125)
    MAX-ACCESS read-only
    STATUS current
    DESCRIPTION "Temperature."
    ::= { acme 1 }
END
`;
