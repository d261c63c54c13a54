// Values as a test file can state them: records compared after turning what YAML cannot write into
// what it can (bigint, bytes, dates), shown on one line, and texts diffed line by line.
import type { Rec } from '../plugins/types.js';

export const isPlainObject = (v: unknown): v is Rec =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date);

/**
 * A record's value as YAML can write it: a bigint is a number while exact (else its digits as text),
 * bytes are base64 text, a date is ISO 8601 text; undefined fields are left out.
 */
export function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(plain);
  if (isPlainObject(v)) {
    const out: Rec = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = plain(x);
    return out;
  }
  return v;
}

/** Deep equality of plain values (NaN equals NaN; key order does not matter). */
export function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'number' && typeof b === 'number') return Number.isNaN(a) && Number.isNaN(b);
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && same(a[k], b[k]));
  }
  return false;
}

/** One line of JSON (NaN and infinities as YAML writes them). */
export function show(v: unknown): string {
  const text = JSON.stringify(plain(v), (_k, x: unknown) =>
    typeof x === 'number' && !Number.isFinite(x) ? (Number.isNaN(x) ? '.nan' : x > 0 ? '.inf' : '-.inf') : x,
  );
  return text === undefined ? 'undefined' : text;
}

/** A line shown so that whitespace differences stay visible. */
const visible = (l: string) => (/[\r\t]|\s$/.test(l) ? JSON.stringify(l) : l);

/** Line diff of two texts (longest common subsequence): '-' expected only, '+' actual only, ' ' both. */
export function diffLines(want: string, got: string): string[] {
  const a = want.split('\n');
  const b = got.split('\n');
  if (a.length * b.length > 4_000_000) {
    // Too large for the table: the first differing line is what matters most.
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return [`  first difference at line ${i + 1}`, `- ${visible(a[i] ?? '(end)')}`, `+ ${visible(b[i] ?? '(end)')}`];
  }
  // lcs[i][j]: length of the common subsequence of a[i..] and b[j..].
  const w = b.length + 1;
  const lcs = new Uint32Array((a.length + 1) * w);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i * w + j] = a[i] === b[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push(`  ${visible(a[i]!)}`);
      i++;
      j++;
    } else if (i < a.length && (j === b.length || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) out.push(`- ${visible(a[i++]!)}`);
    else out.push(`+ ${visible(b[j++]!)}`);
  }
  return trimContext(out, 2);
}

/** Keeps `n` unchanged lines around each change; longer unchanged runs become '...'. */
function trimContext(lines: string[], n: number): string[] {
  const near = lines.map((_, i) => lines.slice(Math.max(0, i - n), i + n + 1).some((l) => l[0] !== ' '));
  const out: string[] = [];
  lines.forEach((l, i) => {
    if (near[i]) out.push(l);
    else if (out[out.length - 1] !== '  ...') out.push('  ...');
  });
  return out;
}
