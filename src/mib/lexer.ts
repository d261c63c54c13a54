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

export class Tokens {
  readonly k: Tok[] = [];
  readonly v: string[] = [];
  readonly pos: number[] = [];
  private lineStarts?: number[];
  private lastLine = 0;

  /** Tokenizes a whole file; throws LexError (with line and column) on a character SMI does not use. */
  constructor(readonly text: string) {
    const { k, v, pos } = this;
    const n = text.length;
    let i = 0;
    for (;;) {
      SKIP.lastIndex = i;
      SKIP.test(text);
      i = SKIP.lastIndex;
      if (i >= n) break;
      TOKEN.lastIndex = i;
      if (!TOKEN.test(text)) {
        const ch = text[i]!;
        this.fail(ch === '"' ? 'unterminated string' : ch === "'" ? "bad quoted value (expected 'hex'H or 'bits'B)" : `unexpected character '${ch}'`, i);
      }
      const e = TOKEN.lastIndex;
      const c = text.charCodeAt(i);
      pos.push(i);
      if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90)) {
        k.push(Tok.Id);
        v.push(text.slice(i, e));
      } else if (c === 34) {
        k.push(Tok.Str);
        v.push(text.slice(i + 1, e - 1));
      } else if (c === 39) {
        k.push((text.charCodeAt(e - 1) | 0x20) === 104 ? Tok.Hex : Tok.Bin);
        v.push(text.slice(i + 1, e - 2).replace(/\s+/g, ''));
      } else if ((c >= 48 && c <= 57) || (c === 45 && e - i > 1)) {
        k.push(Tok.Num);
        v.push(text.slice(i, e));
      } else {
        k.push(Tok.Punct);
        v.push(e - i === 1 ? PUNCT[c]! : text.slice(i, e));
      }
      i = e;
    }
    k.push(Tok.Eof);
    v.push('<end of file>');
    pos.push(n);
  }

  private fail(message: string, at: number): never {
    const [line, col] = this.lineCol(at);
    throw new LexError(message, line, col, this.text.slice(at, at + 20).split('\n')[0]!, at);
  }

  get count(): number {
    return this.k.length;
  }

  line(i: number): number {
    return this.lineCol(this.pos[i]!)[0];
  }

  token(i: number): Token {
    const [line, col] = this.lineCol(this.pos[i]!);
    return { k: this.k[i]!, v: this.v[i]!, line, col };
  }

  /** 1-based line and column of a text offset (queries mostly come in text order: walk on). */
  lineCol(p: number): [number, number] {
    const ls = (this.lineStarts ??= lineStarts(this.text));
    let l = this.lastLine;
    if (ls[l]! > p) l = 0;
    while (l + 1 < ls.length && ls[l + 1]! <= p) l++;
    this.lastLine = l;
    return [l + 1, p - ls[l]! + 1];
  }
}

const PUNCT: Record<number, string> = { 123: '{', 125: '}', 40: '(', 41: ')', 44: ',', 59: ';', 124: '|', 91: '[', 93: ']', 46: '.' };

function lineStarts(text: string): number[] {
  const out = [0];
  for (let p = text.indexOf('\n'); p >= 0; p = text.indexOf('\n', p + 1)) out.push(p + 1);
  return out;
}
