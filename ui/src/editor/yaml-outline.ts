// Where things are in block-style pipeline YAML, read from indentation alone so that it keeps
// working on the half-typed text an editor holds: the path of every key, and what the cursor is on
// (a key being typed inside some mapping, or the value of some key). Flow collections ({...}, [...])
// are opaque here; the server's validation remains the authority on what the text means.
// Pure: no imports, so the tests can load it without a DOM.

export type Seg = string | number;

export interface KeyEntry {
  /** Full path of the key, e.g. ['pipeline', 'sinks', 0, 'type']. */
  path: Seg[];
  /** Offsets of the key text and of its inline value (empty when the value is a nested block). */
  keyFrom: number;
  keyTo: number;
  valueFrom: number;
  valueTo: number;
  /** The inline value, quotes removed. */
  value: string;
}

export type CursorContext = { kind: 'key'; container: Seg[]; prefix: string; from: number } | { kind: 'value'; path: Seg[]; prefix: string; from: number };

interface Frame {
  kind: 'item' | 'key' | 'partial';
  indent: number;
  key?: string;
  keyFrom?: number;
  keyTo?: number;
  value?: string;
  valueFrom?: number;
  valueTo?: number;
}

interface Level {
  indent: number;
  kind: 'item' | 'key';
  seg: Seg;
  /** Sequence items seen so far under this key (the next item's index). */
  items: number;
}

const KEY = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"{[\]}:,&*!|>%@`-][^#:]*?|-[^\s#:][^#:]*?)[ \t]*:(?=\s|$)/;

function unquote(s: string): string {
  const t = s.trim();
  if (t.startsWith('"') && t.endsWith('"') && t.length >= 2) return t.slice(1, -1).replace(/\\(.)/g, '$1');
  if (t.startsWith("'") && t.endsWith("'") && t.length >= 2) return t.slice(1, -1).replace(/''/g, "'");
  return t;
}

/** The inline value after a key's colon, without a trailing comment. */
function inlineValue(rest: string): string {
  const m = /(^|\s)#/.exec(rest);
  return (m ? rest.slice(0, m.index) : rest).trim();
}

/** The frames of one line: sequence dashes, then a key (with its inline value) or a partial word. */
function framesOf(line: string, lineStart: number, partial: boolean): Frame[] {
  const frames: Frame[] = [];
  let i = line.length - line.trimStart().length;
  for (;;) {
    const rest = line.slice(i);
    if (rest.startsWith('#')) return frames;
    if (rest === '-' || rest.startsWith('- ')) {
      frames.push({ kind: 'item', indent: i });
      i += 1;
      while (line[i] === ' ') i++;
      continue;
    }
    const m = KEY.exec(rest);
    if (m) {
      const afterColon = i + m[0].length;
      const raw = line.slice(afterColon);
      const lead = raw.length - raw.trimStart().length;
      const value = inlineValue(raw);
      frames.push({
        kind: 'key',
        indent: i,
        key: unquote(m[1]!),
        keyFrom: lineStart + i,
        keyTo: lineStart + i + m[1]!.length,
        value,
        valueFrom: lineStart + afterColon + lead,
        valueTo: lineStart + afterColon + lead + value.length,
      });
      return frames;
    }
    if (partial && /^[\w.-]*$/.test(rest)) frames.push({ kind: 'partial', indent: i, key: rest, keyFrom: lineStart + i });
    return frames;
  }
}

const isBlockScalar = (value: string) => /^[|>][0-9+-]*$/.test(value);

/** Feeds lines in order and keeps the stack of open mappings and sequence items. */
class Outliner {
  readonly stack: Level[] = [];
  readonly entries: KeyEntry[] = [];
  private rootItems = 0;
  /** Inside a block scalar (| or >): lines indented deeper than this are text, not keys. */
  private blockIndent: number | undefined;

  feed(line: string, lineStart: number) {
    const indent = line.length - line.trimStart().length;
    if (this.blockIndent !== undefined) {
      if (line.trim() === '' || indent > this.blockIndent) return;
      this.blockIndent = undefined;
    }
    for (const f of framesOf(line, lineStart, false)) this.apply(f);
  }

  /** True while the next line would still be inside a block scalar at this indentation. */
  inBlock(indent: number): boolean {
    return this.blockIndent !== undefined && indent > this.blockIndent;
  }

  path(): Seg[] {
    return this.stack.map((l) => l.seg);
  }

  popTo(indent: number) {
    while (this.stack.length && this.stack[this.stack.length - 1]!.indent >= indent) this.stack.pop();
  }

  apply(f: Frame) {
    if (f.kind === 'item') {
      // Items of one sequence share a dash column; the sequence's key may sit at that same column.
      for (;;) {
        const top = this.stack[this.stack.length - 1];
        if (top && (top.indent > f.indent || (top.indent === f.indent && top.kind === 'item'))) this.stack.pop();
        else break;
      }
      const parent = this.stack[this.stack.length - 1];
      const index = parent ? parent.items++ : this.rootItems++;
      this.stack.push({ indent: f.indent, kind: 'item', seg: index, items: 0 });
      return;
    }
    if (f.kind !== 'key') return;
    this.popTo(f.indent);
    const path = [...this.path(), f.key!];
    this.entries.push({ path, keyFrom: f.keyFrom!, keyTo: f.keyTo!, valueFrom: f.valueFrom!, valueTo: f.valueTo!, value: unquote(f.value ?? '') });
    this.stack.push({ indent: f.indent, kind: 'key', seg: f.key!, items: 0 });
    if (isBlockScalar(f.value ?? '')) this.blockIndent = f.indent;
  }
}

function eachLine(text: string, f: (line: string, start: number) => void) {
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n', start);
    f(text.slice(start, end < 0 ? text.length : end).replace(/\r$/, ''), start);
    if (end < 0) return;
    start = end + 1;
  }
}

/** Every key of the text with its full path. */
export function outline(text: string): KeyEntry[] {
  const o = new Outliner();
  eachLine(text, (line, start) => o.feed(line, start));
  return o.entries;
}

export const samePath = (a: readonly Seg[], b: readonly Seg[]) => a.length === b.length && a.every((s, i) => s === b[i]);

/** The inline value of the key at `path`, if the text has one. */
export function valueAt(entries: KeyEntry[], path: Seg[]): string | undefined {
  return entries.find((e) => samePath(e.path, path))?.value || undefined;
}

/** The key whose name or inline value covers offset `pos`. */
export function entryAt(entries: KeyEntry[], pos: number): { entry: KeyEntry; on: 'key' | 'value' } | undefined {
  for (const e of entries) {
    if (pos >= e.keyFrom && pos <= e.keyTo) return { entry: e, on: 'key' };
    if (e.value && pos >= e.valueFrom && pos <= e.valueTo) return { entry: e, on: 'value' };
  }
  return undefined;
}

/** What the cursor at `pos` is on, or undefined (a comment, a block scalar, a flow collection). */
export function contextAt(text: string, pos: number): CursorContext | undefined {
  const lineStart = text.lastIndexOf('\n', pos - 1) + 1;
  const o = new Outliner();
  eachLine(text.slice(0, Math.max(0, lineStart - 1)), (line, start) => lineStart > 0 && o.feed(line, start));
  const before = text.slice(lineStart, pos);
  const indent = before.length - before.trimStart().length;
  if (o.inBlock(indent) && before.trim() !== '') return undefined;
  const frames = framesOf(before, lineStart, true);
  if (/[{[]/.test(before.replace(/"[^"]*"|'[^']*'/g, ''))) return undefined;
  const last = frames[frames.length - 1];
  for (const f of frames) if (f.kind === 'item') o.apply(f);

  if (last?.kind === 'key') {
    const value = before.slice(last.valueFrom! - lineStart);
    if (value.includes('#')) return undefined;
    const prefix = value.replace(/^["']/, '');
    o.popTo(last.indent);
    return { kind: 'value', path: [...o.path(), last.key!], prefix, from: pos - prefix.length };
  }
  if (last?.kind === 'partial') {
    o.popTo(last.indent);
    return { kind: 'key', container: o.path(), prefix: last.key!, from: last.keyFrom! };
  }
  if (before.trim() === '' || last?.kind === 'item') {
    // An empty line or a fresh dash: a key is about to be typed at the cursor's column.
    o.popTo(before.length);
    return { kind: 'key', container: o.path(), prefix: '', from: pos };
  }
  return undefined;
}
