// SMI tokenizer. Two sticky regular expressions run with test() (native code, no match array per
// token): one skips blanks and comments, one takes the next token, whose kind its first character
// tells. Tokens are kept in parallel arrays rather than one object each (less to collect), and line
// and column are derived from the token offset only when a diagnostic or a definition needs them.
//
// Comments: `--` runs to the end of the line. Strict ASN.1 also ends a comment at the next `--`, but
// real MIBs write `-- text -- more text` and rows of dashes meaning the whole line, so we follow
// net-snmp's practical reading (documented in docs/mibs.md).

export const enum Tok {
  /** identifier or keyword (letters, digits, `-`, `_`): `ifIndex`, `OBJECT-TYPE`, `mib-2` */
  Id,
  /** decimal integer, possibly negative */
  Num,
  /** "quoted string" (may span lines; SMI strings have no escapes); value without the quotes */
  Str,
  /** 'hex'H; value between the quotes */
  Hex,
  /** 'binary'B; value between the quotes */
  Bin,
  /** punctuation: ::= { } ( ) , ; .. . | [ ] */
  Punct,
  Eof,
}

/** A token materialised for a diagnostic. */
export interface Token {
  k: Tok;
  v: string;
  /** 1-based */
  line: number;
  /** 1-based */
  col: number;
}

export class LexError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly col: number,
    readonly token: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

// Sticky scanners used with test() (native code, no match array per token): blanks and comments,
// then one token whose kind the first character tells.
const SKIP = /(?:\s+|--[^\n]*)*/y;
const TOKEN = /"[^"]*"|'[^']*'[HhBb]|[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*|-?[0-9]+|::=|\.\.|[{}(),;|[\].]/y;

/** Token kind by first character (what TOKEN matched); quoted values are told apart in quoted(). */
const KIND: Tok[] = [];
for (let c = 65; c <= 90; c++) KIND[c] = Tok.Id;
for (let c = 97; c <= 122; c++) KIND[c] = Tok.Id;
for (let c = 48; c <= 57; c++) KIND[c] = Tok.Num;
KIND[45] = Tok.Num; // -5
KIND[34] = Tok.Str;
KIND[39] = Tok.Hex; // or Bin
for (const ch of '{}(),;|[].:') KIND[ch.charCodeAt(0)] = Tok.Punct;

export class Tokens {
  /** kinds; the last is Eof */
  readonly k: Tok[] = [];
  readonly v: string[] = [];
  /** text offsets */
  readonly pos: number[] = [];
  /** number of tokens, Eof included */
  readonly count: number;

  /** Tokenizes a whole file; throws LexError (with line and column) on a character SMI does not use. */
  constructor(readonly text: string) {
    const { k, v, pos } = this;
    const n = text.length;
    let i = 0;
    // One push per array and no rare cases inline: this loop runs hot before it is optimised, and
    // an optimised loop that meets a case it has not seen yet is thrown away and compiled again.
    // Tried and slower in a fresh process (docs/mibs.md, Benchmark): a hand-written character loop,
    // lexing all files in one call, arrays sized up front, typed arrays.
    for (;;) {
      SKIP.lastIndex = i;
      SKIP.test(text);
      i = SKIP.lastIndex;
      if (i >= n) break;
      TOKEN.lastIndex = i;
      if (!TOKEN.test(text)) throw lexError(text, i);
      const e = TOKEN.lastIndex;
      let kind = KIND[text.charCodeAt(i)]!;
      if (kind === Tok.Str || kind === Tok.Hex) {
        kind = quotedKind(text, i, e);
        v.push(quoted(text, i, e));
      } else v.push(text.slice(i, e));
      k.push(kind);
      pos.push(i);
      i = e;
    }
    k.push(Tok.Eof);
    v.push('<end of file>');
    pos.push(n);
    this.count = k.length;
  }

  line(i: number): number {
    return this.lineAt(this.pos[i]!);
  }

  token(i: number): Token {
    const [line, col] = this.lineCol(this.pos[i]!);
    return { k: this.k[i]!, v: this.v[i]!, line, col };
  }

  /** 1-based line and column of a text offset. */
  lineCol(p: number): [number, number] {
    const line = this.lineAt(p);
    return [line, this.col];
  }

  /** 1-based column of the offset last given to lineAt */
  col = 0;
  /** where lineAt stopped: a line number and the offset its line starts at */
  private atLine = 1;
  private atStart = 0;

  /**
   * 1-based line of a text offset, its column left in `col` (no array to destructure: that runs the
   * iterator protocol in unoptimised code). Queries mostly come in text order: it walks on from the
   * previous answer, newline by newline with indexOf (no table of line starts to build).
   */
  lineAt(p: number): number {
    const text = this.text;
    let line = this.atLine;
    let start = this.atStart;
    if (p < start) {
      line = 1;
      start = 0;
    }
    for (let nl = text.indexOf('\n', start); nl >= 0 && nl < p; nl = text.indexOf('\n', nl + 1)) {
      line++;
      start = nl + 1;
    }
    this.atLine = line;
    this.atStart = start;
    this.col = p - start + 1;
    return line;
  }
}

function lexError(text: string, at: number): LexError {
  const ch = text[at]!;
  const message = ch === '"' ? 'unterminated string' : ch === "'" ? "bad quoted value (expected 'hex'H or 'bits'B)" : `unexpected character '${ch}'`;
  const start = text.lastIndexOf('\n', at - 1) + 1;
  let line = 1;
  for (let nl = text.indexOf('\n'); nl >= 0 && nl < at; nl = text.indexOf('\n', nl + 1)) line++;
  return new LexError(message, line, at - start + 1, text.slice(at, at + 20).split('\n')[0]!, at);
}

function quotedKind(text: string, i: number, e: number): Tok {
  if (text.charCodeAt(i) === 34) return Tok.Str;
  return (text.charCodeAt(e - 1) | 0x20) === 104 ? Tok.Hex : Tok.Bin;
}

/** A string's value without the quotes; 'hex'H / 'bits'B: the digits between the quotes. */
function quoted(text: string, i: number, e: number): string {
  if (text.charCodeAt(i) === 34) return text.slice(i + 1, e - 1);
  return text.slice(i + 1, e - 2).replace(/\s+/g, '');
}
