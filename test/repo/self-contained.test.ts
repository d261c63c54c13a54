// The repository stands alone (issue 20): a fresh clone with nothing beside it passes
// `npm install && npm test`. This guard reads every text file of the code folders and fails on a
// line that refers to a folder outside the repository: the sibling folder `shared` of the
// specification set (as a relative path or as join arguments), an absolute path under the
// machine's work folder, or a path built from the file's own location, the repository root or the working directory that
// climbs above the repository root. The copies the tests need live in docs/spec/ and
// test/fixtures/ (docs/development.md); .ci/run also runs the affected tests in a clone with
// nothing beside it.
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Folders of code and scripts (the README's test command and CI run from them). */
const SCANNED_DIRS = ['src', 'ui', 'test', 'bench', 'fuzz', 'soak', 'scripts', '.ci'];
/** Files at the root that tools read (scanned too; not edited by this guard). */
const SCANNED_ROOT_FILES = ['package.json', 'vitest.config.ts', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.bench.json'];
/**
 * Third-party data copied verbatim (MIB modules, the VES schema): no code, and not ours to edit.
 * Other fixture folders (test/asn1/fixtures holds C, Python, Erlang and TypeScript) are scanned.
 */
const SKIPPED_DIRS = new Set(['test/fixtures/mibs', 'test/fixtures/ves']);

interface Offender {
  file: string;
  line: number;
  reason: string;
  text: string;
}

// The patterns' own names, spelled so that this file passes its own scan.
const UP = '.'.repeat(2);
const SIBLING = `${UP}/shared`;
const SIBLING_ARGS = `'${UP}', 'shared'`;
const WORK = '/' + 'work/';

/** True when the repository-relative path `p` (posix) is above the repository root. */
const above = (p: string): boolean => {
  const n = posix.normalize(p === '' ? '.' : p);
  return n === '..' || n.startsWith('../') || posix.isAbsolute(n);
};

/** The string literals at the start of an argument list tail: `, 'a', "b"` -> ['a', 'b'] (stops at the first non-literal). */
function leadingLiterals(tail: string): string[] {
  const out: string[] = [];
  const re = /^\s*,\s*(['"`])([^'"`$]*)\1/;
  for (let rest = tail, m = re.exec(rest); m; rest = rest.slice(m[0].length), m = re.exec(rest)) out.push(m[2]!);
  return out;
}

/**
 * The offending lines of one file. `file` is the repository-relative path with `/` separators: the
 * climbing checks resolve paths against the file's folder (import.meta.url, import.meta.dirname,
 * __dirname, `$(dirname "$0")`) or against the repository root (process.cwd(): tests, benchmarks
 * and CI run from the root; variables named root/ROOT/repoRoot).
 */
function scanText(file: string, text: string): Offender[] {
  const dir = posix.dirname(file) === '.' ? '' : posix.dirname(file);
  const out: Offender[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const hit = (reason: string) => out.push({ file, line: i + 1, reason, text: l.trim() });
    if (/\.\.[\\/]+shared\b/.test(l)) hit(`refers to the sibling folder ${SIBLING}`);
    if (/(['"`])\.\.\1\s*,\s*(['"`])shared\2/.test(l)) hit(`builds the sibling folder ${SIBLING_ARGS}`);
    if (/\/work\//.test(l)) hit(`refers to an absolute path under ${WORK}`);
    // new URL('../../x', import.meta.url): relative to the file.
    for (const m of l.matchAll(/new URL\(\s*(['"`])([^'"`$]*)[^'"`]*\1\s*,\s*import\.meta\.url/g)) {
      if (above(posix.join(dir, m[2]!))) hit(`climbs above the repository root: new URL('${m[2]}', import.meta.url) from ${dir || '.'}`);
    }
    // join/resolve(<base>, '..', 'x', ...): from the file's folder, the root or the working directory.
    for (const m of l.matchAll(/\b(?:join|resolve)\(\s*(import\.meta\.dirname|__dirname|process\.cwd\(\)|[A-Za-z_$][\w$]*)((?:\s*,\s*(['"`])[^'"`$]*\3)*)/g)) {
      const base = m[1]!;
      const from = base === 'import.meta.dirname' || base === '__dirname' ? dir : base === 'process.cwd()' || /^(repo_?)?root(_?dir)?$/i.test(base) ? '' : null;
      if (from === null) continue;
      const parts = leadingLiterals(m[2]!);
      if (parts.length && above(posix.join(from, ...parts))) hit(`climbs above the repository root: ${m[0]}`);
    }
    // Shell: $(dirname "$0")/../..
    for (const m of l.matchAll(/\$\(dirname\s+"?\$(?:0|\{BASH_SOURCE\[0\]\}|BASH_SOURCE)"?\)((?:\/\.\.)+)/g)) {
      if (above(posix.join(dir, m[1]!.slice(1)))) hit(`climbs above the repository root: $(dirname "$0")${m[1]} from ${dir || '.'}`);
    }
  }
  return out;
}

/** Every scanned file (repository-relative, `/` separators), binary files left out. */
function scannedFiles(): string[] {
  const files: string[] = [];
  const walk = (rel: string) => {
    if (SKIPPED_DIRS.has(rel)) return;
    for (const e of readdirSync(join(ROOT, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory() && e.name !== 'node_modules') walk(child);
      else if (e.isFile()) files.push(child);
    }
  };
  for (const d of SCANNED_DIRS) walk(d);
  for (const f of SCANNED_ROOT_FILES) files.push(f);
  return files;
}

const isBinary = (b: Buffer) => b.subarray(0, 8192).includes(0);

describe('the repository stands alone', () => {
  it('no file of src/, test/, bench/, fuzz/, soak/, scripts/, .ci/ (or the root configs) refers to a folder outside the repository', () => {
    const files = scannedFiles();
    // The walk really covers the tree (a wrong ROOT would scan nothing and pass).
    expect(files).toEqual(
      expect.arrayContaining(['test/mib/helpers.ts', 'test/console/contract.test.ts', 'bench/mib-scenarios.ts', '.ci/run', 'test/repo/self-contained.test.ts']),
    );
    expect(files.length).toBeGreaterThan(200);
    const offenders: Offender[] = [];
    for (const f of files) {
      let buf: Buffer;
      try {
        buf = readFileSync(join(ROOT, ...f.split('/')));
      } catch {
        continue; // a root config that does not exist
      }
      if (!isBinary(buf)) offenders.push(...scanText(f, buf.toString('utf8')));
    }
    const report = offenders.map((o) => `${o.file}:${o.line}: ${o.reason}\n    ${o.text}`).join('\n');
    expect(offenders, `files refer to folders outside the repository (keep what they need in docs/spec/ or test/fixtures/):\n${report}`).toEqual([]);
  });

  it('the copies the tests read are in the repository', () => {
    const mibs = readdirSync(join(ROOT, 'test', 'fixtures', 'mibs', 'net-snmp'));
    expect(mibs).toHaveLength(78);
    expect(mibs.every((f) => f.endsWith('.txt'))).toBe(true);
    expect(readdirSync(join(ROOT, 'docs', 'spec')).sort()).toEqual([
      '1-operator-console-api.md',
      '2-pipeline-engine-api.md',
      '3-pipeline-config-reference.md',
      'README.md',
    ]);
    expect(readdirSync(join(ROOT, 'test', 'fixtures', 'ves')).sort()).toEqual(['CommonEventFormat_30.1.1.json', 'LICENSE.txt', 'README.md']);
    expect(
      relative(ROOT, fileURLToPath(import.meta.url))
        .split(sep)
        .join('/'),
    ).toBe('test/repo/self-contained.test.ts');
  });
});

describe('scanText (the guard itself)', () => {
  // Offending lines are built at run time, so that this file stays clean for the scan above.
  const up = UP;
  const sib = 'sha' + 'red';
  const work = WORK;

  it('names file:line of every offender', () => {
    const text = [
      `import { join } from 'node:path';`,
      `export const CORPUS = resolve(import.meta.dirname, '${up}/${up}/${up}/${sib}/mibs/net-snmp');`,
      `const SPEC = fileURLToPath(new URL('${up}/${up}/${up}/${sib}/spec/1.md', import.meta.url));`,
      `const a = join(root, '${up}', '${sib}', 'mibs');`,
      `const b = '${work}shared/ves/x.json';`,
      `// fine: join(import.meta.dirname, '${up}', 'fixtures')`,
    ].join('\n');
    const got = scanText('test/mib/helpers.ts', text);
    expect(got.map((o) => o.line)).toEqual([2, 2, 3, 3, 4, 4, 5]);
    expect(got.map((o) => `${o.file}:${o.line}`)).toContain('test/mib/helpers.ts:4');
    expect(got.find((o) => o.line === 5)!.reason).toContain(WORK);
  });

  it('detects paths that climb above the root without naming the sibling folder', () => {
    const climb = (file: string, line: string) => scanText(file, line).map((o) => o.reason);
    expect(climb('test/console/x.test.ts', `new URL('${up}/${up}/${up}/other/doc.md', import.meta.url)`)).toEqual([expect.stringContaining('climbs above')]);
    expect(climb('test/console/x.test.ts', `join(import.meta.dirname, '${up}', '${up}', '${up}', 'other')`)).toEqual([expect.stringContaining('climbs above')]);
    expect(climb('bench/x.ts', `resolve(process.cwd(), '${up}/other')`)).toEqual([expect.stringContaining('climbs above')]);
    expect(climb('test/x.ts', `path.join(ROOT, '${up}')`)).toEqual([expect.stringContaining('climbs above')]);
    expect(climb('.ci/run', `cd "$(dirname "$0")/${up}/${up}"`)).toEqual([expect.stringContaining('climbs above')]);
    expect(climb('test/x.ts', `const p = '${up}\\\\${sib}\\\\spec';`)).toEqual([expect.stringContaining(`${up}/${sib}`)]);
  });

  it('leaves paths inside the repository alone', () => {
    const ok = [
      `const ROOT = fileURLToPath(new URL('${up}/${up}/', import.meta.url));`,
      `const CDR = join(import.meta.dirname, '${up}', '${up}', 'examples', 'schemas', 'cdr');`,
      `new URL('${up}/src/mib/compiler.js', import.meta.url)`,
      `join(process.cwd(), 'test', 'fixtures', 'mibs', 'net-snmp')`,
      `join(dir, '${up}', '${up}', 'x')`, // an unknown base: not judged
      `for (const p of ['/api/schemas/${up}/${up}/etc/passwd', '${up}/x']) {}`,
      `cd "$(dirname "$0")/${up}"`,
      `// shared by the console and the daemon`,
    ];
    expect(scanText('test/cli/x.test.ts', ok.slice(0, 2).join('\n'))).toEqual([]);
    expect(scanText('bench/x.ts', ok.slice(2).join('\n'))).toEqual([]);
    expect(scanText('.ci/run', ok[6]!)).toEqual([]);
  });
});
