// The Prometheus exposition formats, bounded: the text format 0.0.4 and OpenMetrics 1.0 text, as
// Prometheus 2.42's own parsers read them (model/textparse/promparse.go, openmetricsparse.go). A
// hand-written parser (docs/connectors/prometheus_scrape.md says why no library): one pass over
// the lines, every count and size bounded by Limits, and any malformed line fails the whole body
// with its line number (Prometheus fails the whole scrape too: a half-read target is no sample).
//
//   # HELP <name> <text>            # TYPE <name> <type>          # UNIT <name> <unit> (OpenMetrics)
//   <name>[{<label>="<value>",...}] <value> [<timestamp>] [# {<labels>} <value> [<ts>]] (exemplar, OpenMetrics)
//   # EOF                                                         (OpenMetrics: the last line)
//
// Timestamps are integer milliseconds in the text format and float seconds in OpenMetrics.

export type Format = 'text' | 'openmetrics';

export interface Limits {
  /** Samples at most (Prometheus' sample_limit); past it the body is refused. */
  maxSamples: number;
  /** Labels of one sample at most (label_limit). */
  maxLabels: number;
  /** Bytes of a label name (label_name_length_limit), of a label value (label_value_length_limit). */
  maxLabelNameBytes: number;
  maxLabelValueBytes: number;
  /** Bytes of one line. */
  maxLineBytes: number;
  /** Metric families (HELP/TYPE/UNIT lines) at most. */
  maxFamilies: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxSamples: 200_000,
  maxLabels: 64,
  maxLabelNameBytes: 256,
  maxLabelValueBytes: 4096,
  maxLineBytes: 65_536,
  maxFamilies: 50_000,
};

export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, when the line has a timestamp. */
  timestamp_ms?: number;
  /** The family's TYPE (counter, gauge, histogram, summary, untyped / unknown, info, stateset, gaugehistogram). */
  type: string;
  help?: string;
  unit?: string;
}

export class ExpositionError extends Error {
  override name = 'ExpositionError';
}

const fail = (line: number, what: string): never => {
  throw new ExpositionError(`line ${line}: ${what}`);
};

const TYPES_TEXT = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const TYPES_OM = new Set(['counter', 'gauge', 'histogram', 'gaugehistogram', 'summary', 'info', 'stateset', 'unknown']);
/** Sample name suffixes that belong to a family of these types. */
const SUFFIXES: Record<string, string[]> = {
  counter: ['_total', '_created'],
  histogram: ['_bucket', '_sum', '_count', '_created'],
  gaugehistogram: ['_bucket', '_gsum', '_gcount'],
  summary: ['_sum', '_count', '_created'],
  info: ['_info'],
};

const NAME_START = /[a-zA-Z_:]/;
const NAME_REST = /[a-zA-Z0-9_:]/;
const LABEL_START = /[a-zA-Z_]/;
const LABEL_REST = /[a-zA-Z0-9_]/;

/** A sample value as Go's ParseFloat takes it in these formats (NaN, ±Inf in any case, decimals, exponents, hex is not). */
function parseValue(s: string, line: number): number {
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Number(s);
  const l = s.toLowerCase();
  if (l === 'nan') return NaN;
  if (l === '+inf' || l === 'inf' || l === '+infinity' || l === 'infinity') return Infinity;
  if (l === '-inf' || l === '-infinity') return -Infinity;
  return fail(line, `"${s.slice(0, 40)}" is not a sample value`);
}

/** Largest |ms| a Date holds. */
const MAX_MS = 8.64e15;

function parseTimestamp(s: string, format: Format, line: number): number {
  let ms: number;
  if (format === 'openmetrics') {
    if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) fail(line, `"${s.slice(0, 40)}" is not a timestamp (seconds)`);
    ms = Math.round(Number(s) * 1000);
  } else {
    if (!/^-?\d{1,19}$/.test(s)) fail(line, `"${s.slice(0, 40)}" is not a timestamp (integer milliseconds)`);
    ms = Number(s);
  }
  if (!(Math.abs(ms) <= MAX_MS)) fail(line, `timestamp ${s.slice(0, 40)} is out of range`);
  return ms;
}

/** A cursor over one line. */
class Line {
  pos = 0;
  constructor(
    readonly text: string,
    readonly no: number,
  ) {}
  get done() {
    return this.pos >= this.text.length;
  }
  peek() {
    return this.text[this.pos];
  }
  spaces(required: boolean) {
    const start = this.pos;
    while (this.text[this.pos] === ' ' || this.text[this.pos] === '\t') this.pos++;
    if (required && this.pos === start && !this.done) fail(this.no, `expected a space at column ${this.pos + 1}`);
  }
  name(start: RegExp, rest: RegExp, what: string, max: number): string {
    const s = this.pos;
    if (!start.test(this.text[this.pos] ?? '')) fail(this.no, `expected ${what} at column ${this.pos + 1}`);
    this.pos++;
    while (this.pos < this.text.length && rest.test(this.text[this.pos]!)) this.pos++;
    if (this.pos - s > max) fail(this.no, `${what} longer than ${max} bytes`);
    return this.text.slice(s, this.pos);
  }
  token(): string {
    const s = this.pos;
    while (this.pos < this.text.length && this.text[this.pos] !== ' ' && this.text[this.pos] !== '\t') this.pos++;
    return this.text.slice(s, this.pos);
  }
  /** A double-quoted label value with \\, \" and \n escapes. */
  quoted(max: number): string {
    if (this.text[this.pos] !== '"') fail(this.no, `expected '"' at column ${this.pos + 1}`);
    this.pos++;
    let out = '';
    for (;;) {
      if (this.pos >= this.text.length) fail(this.no, 'unterminated label value');
      const c = this.text[this.pos++]!;
      if (c === '"') break;
      if (c === '\\') {
        const e = this.text[this.pos++];
        if (e === 'n') out += '\n';
        else if (e === '\\' || e === '"') out += e;
        else fail(this.no, `invalid escape \\${e ?? ''} in a label value`);
      } else out += c;
      if (out.length > max) fail(this.no, `label value longer than ${max} characters`);
    }
    return out;
  }
}

/** `{a="1",b="2"}` at the cursor (the brace included): the labels, bounded. */
function labelSet(l: Line, lim: Limits, format: Format, into: Record<string, string>): void {
  l.pos++; // {
  let n = 0;
  for (;;) {
    if (format === 'text') l.spaces(false);
    if (l.peek() === '}') {
      l.pos++;
      return;
    }
    const name = l.name(LABEL_START, LABEL_REST, 'a label name', lim.maxLabelNameBytes);
    if (format === 'text') l.spaces(false);
    if (l.peek() !== '=') fail(l.no, `expected '=' after label ${name}`);
    l.pos++;
    if (format === 'text') l.spaces(false);
    const value = l.quoted(lim.maxLabelValueBytes);
    if (Object.hasOwn(into, name)) fail(l.no, `label ${name} twice`);
    if (++n > lim.maxLabels) fail(l.no, `more than ${lim.maxLabels} labels`);
    // Defined, not assigned: a label named __proto__ is a label, not the object's prototype.
    Object.defineProperty(into, name, { value, enumerable: true, writable: true, configurable: true });
    if (format === 'text') l.spaces(false);
    const c = l.peek();
    if (c === ',') l.pos++;
    else if (c !== '}') fail(l.no, `expected ',' or '}' at column ${l.pos + 1}`);
  }
}

interface Family {
  type?: string;
  help?: string;
  unit?: string;
}

/**
 * Parses a whole exposition body into samples (handed to `emit` in order); throws ExpositionError
 * with the line and what is wrong. `__name__` and the family's metadata are resolved per sample.
 */
export function parseExposition(body: string, format: Format, lim: Limits = DEFAULT_LIMITS, emit: (s: ParsedSample) => void): number {
  const families = new Map<string, Family>();
  let samples = 0;
  let eof = false;
  let start = 0;
  let no = 0;
  const typeOf = (name: string): Family | undefined => {
    const f = families.get(name);
    if (f?.type) return f;
    for (const [type, suffixes] of Object.entries(SUFFIXES)) {
      for (const sfx of suffixes) {
        if (!name.endsWith(sfx)) continue;
        const fam = families.get(name.slice(0, -sfx.length));
        if (fam?.type === type) return fam;
      }
    }
    return f;
  };
  while (start < body.length) {
    let end = body.indexOf('\n', start);
    if (end < 0) end = body.length;
    no++;
    if (end - start > lim.maxLineBytes) fail(no, `longer than ${lim.maxLineBytes} bytes`);
    let text = body.slice(start, end);
    start = end + 1;
    if (text.endsWith('\r') && format === 'text') text = text.slice(0, -1);
    if (eof) fail(no, 'text after # EOF');
    if (text.trim() === '') {
      if (format === 'openmetrics') fail(no, 'empty line (OpenMetrics has none)');
      continue;
    }
    const l = new Line(text, no);
    if (text[0] === '#' || (format === 'text' && /^[ \t]*#/.test(text))) {
      l.spaces(false);
      l.pos++; // #
      if (format === 'openmetrics' && text === '# EOF') {
        eof = true;
        continue;
      }
      l.spaces(format === 'openmetrics');
      const kw = l.token();
      if (kw !== 'HELP' && kw !== 'TYPE' && kw !== 'UNIT') {
        if (format === 'openmetrics') fail(no, `unknown comment "# ${kw.slice(0, 20)}" (OpenMetrics allows HELP, TYPE, UNIT, EOF)`);
        continue; // a comment
      }
      if (kw === 'UNIT' && format === 'text') continue;
      l.spaces(true);
      const name = l.name(NAME_START, NAME_REST, 'a metric name', lim.maxLabelValueBytes);
      let fam = families.get(name);
      if (!fam) {
        if (families.size >= lim.maxFamilies) fail(no, `more than ${lim.maxFamilies} metric families`);
        fam = {};
        families.set(name, fam);
      }
      if (kw === 'TYPE') {
        l.spaces(true);
        const t = l.token();
        if (!(format === 'text' ? TYPES_TEXT : TYPES_OM).has(t)) fail(no, `unknown type "${t.slice(0, 20)}"`);
        if (fam.type !== undefined) fail(no, `second TYPE line for ${name}`);
        fam.type = t;
      } else {
        // HELP and UNIT: the rest of the line, HELP unescaped (\\ and \n; OpenMetrics also \").
        if (!l.done) l.pos++; // the one separating space
        const rest = text.slice(l.pos);
        if (kw === 'UNIT') fam.unit = rest;
        else fam.help = rest.replace(/\\(.)/g, (m, c: string) => (c === 'n' ? '\n' : c === '\\' ? '\\' : c === '"' && format === 'openmetrics' ? '"' : m));
      }
      continue;
    }
    // A sample.
    if (format === 'text') l.spaces(false);
    const name = l.name(NAME_START, NAME_REST, 'a metric name', lim.maxLabelValueBytes);
    const labels: Record<string, string> = {};
    if (format === 'text') {
      // The text format allows blanks between the name and its labels.
      const at = l.pos;
      l.spaces(false);
      if (l.peek() !== '{') l.pos = at;
    }
    if (l.peek() === '{') labelSet(l, lim, format, labels);
    if (format === 'text') l.spaces(true);
    else if (l.peek() !== ' ') fail(no, `expected a space at column ${l.pos + 1}`);
    else l.pos++;
    const value = parseValue(l.token(), no);
    let ts: number | undefined;
    if (!l.done) {
      l.spaces(true);
      if (!l.done && l.peek() !== '#') {
        ts = parseTimestamp(l.token(), format, no);
        l.spaces(false);
      }
      if (!l.done) {
        // An exemplar (OpenMetrics): checked for shape, not kept (Prometheus keeps it apart from samples).
        if (format !== 'openmetrics' || l.peek() !== '#') fail(no, `unexpected "${text.slice(l.pos, l.pos + 20)}" after the sample`);
        l.pos++;
        l.spaces(true);
        if (l.peek() !== '{') fail(no, 'an exemplar starts with {');
        labelSet(l, lim, format, {});
        l.spaces(true);
        parseValue(l.token(), no);
        if (!l.done) {
          l.spaces(true);
          parseTimestamp(l.token(), format, no);
        }
        if (!l.done) fail(no, 'text after the exemplar');
      }
    }
    if (++samples > lim.maxSamples) fail(no, `more than ${lim.maxSamples} samples (max_samples)`);
    const fam = typeOf(name);
    emit({
      name,
      labels,
      value,
      ...(ts !== undefined ? { timestamp_ms: ts } : {}),
      type: fam?.type ?? (format === 'openmetrics' ? 'unknown' : 'untyped'),
      ...(fam?.help !== undefined ? { help: fam.help } : {}),
      ...(fam?.unit !== undefined ? { unit: fam.unit } : {}),
    });
  }
  if (format === 'openmetrics' && !eof) fail(no, 'no # EOF at the end (an OpenMetrics body ends with it: the body was cut)');
  return samples;
}

/** The format of a body from its Content-Type (what Prometheus decides by too). */
export function formatOf(contentType: string | undefined): Format {
  return /^application\/openmetrics-text/i.test((contentType ?? '').trim()) ? 'openmetrics' : 'text';
}
