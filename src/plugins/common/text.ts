import { isAscii } from 'node:buffer';

// Text helpers shared by the text-based serializers.

/** Decodes bytes in the configured character encoding (utf-8 fast path, else WHATWG TextDecoder). */
export function decoderFor(encoding: string): (b: Buffer) => string {
  const e = encoding.toLowerCase().replace(/_/g, '-');
  if (e === 'utf-8' || e === 'utf8') return (b) => b.toString('utf8');
  const td = new TextDecoder(e); // throws RangeError for unknown labels: validated by lintEncoding
  return (b) => td.decode(b);
}

/** Lint helper: an encoding label Node cannot decode. */
export function lintEncoding(encoding: string, path = 'encoding') {
  try {
    decoderFor(encoding);
    return [];
  } catch {
    return [{ path, message: `unknown character encoding "${encoding}" (examples: utf-8, latin1, utf-16le, windows-1252)` }];
  }
}

const NON_ASCII = /[\u0080-\uffff]/;
const NON_ASCII_G = /[\u0080-\uffff]/g;
const escapeChar = (c: string) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');

/** ensure_ascii: JSON text with every non-ASCII character written as \uXXXX (as Python's json). */
export function asciiJson(s: string): string {
  return NON_ASCII.test(s) ? s.replace(NON_ASCII_G, escapeChar) : s;
}

/**
 * UTF-8 bytes of JSON text, with ensure_ascii applied. The encoded length equals the string length
 * exactly when every character is ASCII, so the common case needs no extra scan.
 */
export function jsonBytes(s: string, ensureAscii: boolean): Buffer {
  const b = Buffer.from(s, 'utf8');
  return ensureAscii && b.length !== s.length ? Buffer.from(asciiJson(s), 'utf8') : b;
}

/**
 * jsonBytes of the concatenation of `parts`, written part by part into one buffer: joining large
 * text first makes V8 flatten the joined string before encoding it, which cost the otlp-ingest
 * bench's NDJSON body more than the JSON.stringify (docs/benchmarks.md). As jsonBytes, the byte
 * and character counts are equal exactly when every character is ASCII.
 */
export function jsonBytesOf(parts: readonly string[], ensureAscii: boolean): Buffer {
  let bytes = 0;
  let chars = 0;
  for (let i = 0; i < parts.length; i++) {
    bytes += Buffer.byteLength(parts[i]!, 'utf8');
    chars += parts[i]!.length;
  }
  if (ensureAscii && bytes !== chars) return jsonBytes(parts.join(''), true);
  const b = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (let i = 0; i < parts.length; i++) at += b.write(parts[i]!, at, 'utf8');
  return b;
}

/** Text of a chunk: ASCII (checked natively) decodes as latin1, which skips UTF-8 validation. */
export function utf8Text(b: Buffer): string {
  return isAscii(b) ? b.toString('latin1') : b.toString('utf8');
}

/** Splits chunk text into lines, dropping a trailing '\r' (CRLF files) and the final empty piece. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.length && l.charCodeAt(l.length - 1) === 13) lines[i] = l.slice(0, -1);
  }
  return lines;
}

/**
 * Whether JSON text nests arrays and objects deeper than `max`. V8's JSON.parse builds any depth,
 * but what later walks a record recursively (structuredClone to a worker thread, JSON.stringify at
 * a sink) overflows the stack near 3,000 levels: such input is refused before it is parsed, as a
 * parse error. One pass over the text, skipping strings; unbalanced brackets only lower the count.
 */
export function tooDeepJson(s: string, max: number): boolean {
  // Deeper than max needs more than max opening brackets: short text (most NDJSON lines) is not
  // scanned, and text with fewer brackets is counted by indexOf (native) instead of walked here.
  if (s.length <= max || !moreThan(s, max, '[', '{')) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (inString) {
      if (c === 0x22) inString = false;
      else if (c === 0x5c) i++;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return false;
}

/** Whether `s` holds more than `n` of the characters `a` and `b` together (stops counting past n). */
function moreThan(s: string, n: number, a: string, b: string): boolean {
  let count = 0;
  for (let i = s.indexOf(a); i !== -1; i = s.indexOf(a, i + 1)) if (++count > n) return true;
  for (let i = s.indexOf(b); i !== -1; i = s.indexOf(b, i + 1)) if (++count > n) return true;
  return false;
}
