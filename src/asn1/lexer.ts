// Tokens of ASN.1 module text (X.680): identifiers, numbers, strings ("..", '..'H/B), punctuation.
// Comments are `-- ... --` / `-- ...` to end of line, and `/* ... */` (nested).

export interface Token {
  kind: 'word' | 'number' | 'real' | 'cstring' | 'bstring' | 'hstring' | 'punct' | 'eof';
  text: string;
  line: number;
  col: number;
}

export class Asn1SyntaxError extends Error {
  override name = 'Asn1SyntaxError';
  constructor(
    message: string,
    readonly file: string,
    readonly line: number,
    readonly col: number,
    readonly token: string,
  ) {
    super(`${file}:${line}:${col}: ${message}${token ? ` (at '${token}')` : ''}`);
  }
}

const PUNCT = ['::=', '...', '..', '[[', ']]', '{', '}', '(', ')', '[', ']', ',', ';', '|', '^', '<', '>', '@', '!', ':', '.', '-', '&'];

export function tokenize(text: string, file: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const n = text.length;
  const at = (): { line: number; col: number } => ({ line, col: i - lineStart + 1 });
  while (i < n) {
    const c = text[i]!;
    if (c === '\n') {
      i++;
      line++;
      lineStart = i;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v' || c === '\u00a0') {
      i++;
      continue;
    }
    if (c === '-' && text[i + 1] === '-') {
      // A `--` comment ends at the next `--` or at the end of the line.
      i += 2;
      while (i < n && text[i] !== '\n') {
        if (text[i] === '-' && text[i + 1] === '-') {
          i += 2;
          break;
        }
        i++;
      }
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (text[i] === '*' && text[i + 1] === '/') {
          depth--;
          i += 2;
        } else {
          if (text[i] === '\n') {
            line++;
            lineStart = i + 1;
          }
          i++;
        }
      }
      continue;
    }
    const pos = at();
    if (/[A-Za-z]/.test(c)) {
      let j = i + 1;
      // A hyphen belongs to the word unless doubled (comment) or trailing.
      while (j < n && (/[A-Za-z0-9_]/.test(text[j]!) || (text[j] === '-' && text[j + 1] !== '-' && /[A-Za-z0-9]/.test(text[j + 1] ?? '')))) j++;
      out.push({ kind: 'word', text: text.slice(i, j), ...pos });
      i = j;
      continue;
    }
    if (/[0-9]/.test(c)) {
      let j = i;
      while (j < n && /[0-9]/.test(text[j]!)) j++;
      // 1.5 is a real; 1..5 is a range.
      if (text[j] === '.' && /[0-9]/.test(text[j + 1] ?? '')) {
        j++;
        while (j < n && /[0-9eE+-]/.test(text[j]!)) j++;
        out.push({ kind: 'real', text: text.slice(i, j), ...pos });
      } else out.push({ kind: 'number', text: text.slice(i, j), ...pos });
      i = j;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      let s = '';
      for (;;) {
        if (j >= n) throw new Asn1SyntaxError('unterminated character string', file, pos.line, pos.col, '"');
        if (text[j] === '"') {
          if (text[j + 1] === '"') {
            s += '"';
            j += 2;
          } else break;
        } else {
          if (text[j] === '\n') {
            line++;
            lineStart = j + 1;
          }
          s += text[j++];
        }
      }
      out.push({ kind: 'cstring', text: s, ...pos });
      i = j + 1;
      continue;
    }
    if (c === "'") {
      const j = text.indexOf("'", i + 1);
      const kind = text[j + 1];
      if (j === -1 || (kind !== 'H' && kind !== 'B'))
        throw new Asn1SyntaxError("bad bstring/hstring (expected '...'B or '...'H)", file, pos.line, pos.col, text.slice(i, i + 10));
      out.push({ kind: kind === 'H' ? 'hstring' : 'bstring', text: text.slice(i + 1, j).replace(/\s+/g, ''), ...pos });
      i = j + 2;
      continue;
    }
    const p = PUNCT.find((x) => text.startsWith(x, i));
    if (!p) throw new Asn1SyntaxError('unexpected character', file, pos.line, pos.col, c);
    out.push({ kind: 'punct', text: p, ...pos });
    i += p.length;
  }
  out.push({ kind: 'eof', text: '', line, col: i - lineStart + 1 });
  return out;
}
