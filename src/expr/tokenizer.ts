// Turns expression source into tokens. The whole source is bounded by compile()'s length limit,
// so tokenizing eagerly into an array is cheap and keeps the parser simple.
import { fail, quote } from './errors.js';

export type TokenKind = 'number' | 'string' | 'name' | 'keyword' | 'op' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  /** The source text of the token (for messages); for keywords and operators, what the parser matches. */
  readonly text: string;
  /** Literal value of number and string tokens. */
  readonly value?: number | string;
  readonly pos: number;
}

export const KEYWORDS: ReadonlySet<string> = new Set(['and', 'or', 'not', 'in', 'is', 'if', 'else', 'true', 'false', 'null', 'True', 'False', 'None']);

// Longest first, so '**' wins over '*' and '//' over '/'.
const OPERATORS = ['**', '//', '==', '!=', '<=', '>=', '<', '>', '+', '-', '*', '/', '%', '(', ')', '[', ']', ',', '.', '$'];

// Operators from other languages that people will type; each gets a pointed hint instead of a bare error.
const MISTAKES: ReadonlyArray<readonly [string, string]> = [
  ['&&', "'&&' is not an operator; use 'and'"],
  ['||', "'||' is not an operator; use 'or'"],
  ['===', "'===' is not an operator; use '=='"],
  ['!==', "'!==' is not an operator; use '!='"],
  ['<<', 'bitwise operators are not supported'],
  ['>>', 'bitwise operators are not supported'],
  ['!', "'!' is not an operator; use 'not'"],
  ['=', "'=' is not allowed (there is no assignment); use '==' to compare"],
  ['&', 'bitwise operators are not supported'],
  ['|', 'bitwise operators are not supported'],
  ['^', 'bitwise operators are not supported'],
  ['~', 'bitwise operators are not supported'],
  [':', "':' is not supported (there are no slices, dictionaries or lambdas)"],
  [';', "';' is not allowed: an expression is a single expression"],
];

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isNameStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isNameChar = (c: number): boolean => isNameStart(c) || isDigit(c);
const isSpace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13;

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const at = (pos: number) => ({ pos, source });
  let i = 0;

  // A '.' directly before a digit starts a number (".5") unless it follows something that can be
  // dotted into; then "a.0" is a member access the parser can explain.
  const afterValue = (): boolean => {
    const last = tokens[tokens.length - 1];
    if (last === undefined) return false;
    if (last.kind === 'number' || last.kind === 'string' || last.kind === 'name') return true;
    if (last.kind === 'keyword') return ['true', 'false', 'null', 'True', 'False', 'None'].includes(last.text);
    return last.text === ')' || last.text === ']';
  };

  while (i < source.length) {
    const c = source.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    const start = i;

    if (isDigit(c) || (c === 46 && isDigit(source.charCodeAt(i + 1)) && !afterValue())) {
      i = readNumber(source, i, tokens);
      continue;
    }

    // r'...' / R"..." raw strings: backslashes stay as written (handy for regular expressions).
    if ((c === 114 || c === 82) && (source[i + 1] === "'" || source[i + 1] === '"')) {
      i = readString(source, i + 1, true, tokens, start);
      continue;
    }
    if (c === 39 || c === 34) {
      i = readString(source, i, false, tokens, start);
      continue;
    }

    if (isNameStart(c)) {
      while (i < source.length && isNameChar(source.charCodeAt(i))) i++;
      const text = source.slice(start, i);
      tokens.push({ kind: KEYWORDS.has(text) ? 'keyword' : 'name', text, pos: start });
      continue;
    }

    const op = OPERATORS.find((o) => source.startsWith(o, i));
    const mistake = MISTAKES.find(([m]) => source.startsWith(m, i));
    // '!=' and '<=' etc. are real operators; a mistake only counts when it is the longer match.
    if (mistake !== undefined && (op === undefined || mistake[0].length > op.length)) fail(mistake[1], at(start));
    if (op !== undefined) {
      tokens.push({ kind: 'op', text: op, pos: start });
      i += op.length;
      continue;
    }

    const ch = String.fromCodePoint(source.codePointAt(i) ?? c);
    const shown = /[\p{L}\p{N}\p{P}\p{S}]/u.test(ch) ? `'${ch}'` : `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    const hint = /\p{L}/u.test(ch) ? " (names may contain only ASCII letters, digits and '_'; write $['name'] for any other field name)" : '';
    fail(`unexpected character ${shown}${hint}`, at(start));
  }
  tokens.push({ kind: 'eof', text: 'end of expression', pos: source.length });
  return tokens;
}

function readNumber(source: string, start: number, tokens: Token[]): number {
  const at = { pos: start, source };
  let i = start;
  let integer = true;
  while (isDigit(source.charCodeAt(i))) i++;
  if (source[i] === '.' && isDigit(source.charCodeAt(i + 1))) {
    integer = false;
    i++;
    while (isDigit(source.charCodeAt(i))) i++;
  }
  if (source[i] === 'e' || source[i] === 'E') {
    let j = i + 1;
    if (source[j] === '+' || source[j] === '-') j++;
    if (isDigit(source.charCodeAt(j))) {
      integer = false;
      while (isDigit(source.charCodeAt(j))) j++;
      i = j;
    }
  }
  if (isNameChar(source.charCodeAt(i))) {
    let end = i;
    while (isNameChar(source.charCodeAt(end))) end++;
    const text = source.slice(start, end);
    const hint = /^0[xX]/.test(text) ? `; hex literals are not supported, write int('${text.slice(2)}', 16)` : '';
    fail(`invalid number ${quote(text)}${hint}`, at);
  }
  const text = source.slice(start, i);
  const value = Number(text);
  if (!Number.isFinite(value)) fail(`number ${quote(text)} is out of range`, at);
  // Numbers are 64-bit floats: refuse integer literals that would silently change value.
  if (integer && !Number.isSafeInteger(value)) {
    fail(`integer ${quote(text)} is too large (integers are exact only up to ${Number.MAX_SAFE_INTEGER})`, at);
  }
  tokens.push({ kind: 'number', text, value, pos: start });
  return i;
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '0': '\0',
  '\\': '\\',
  "'": "'",
  '"': '"',
};

/** Reads a string literal whose opening quote is at `q`; `start` includes a raw prefix. */
function readString(source: string, q: number, raw: boolean, tokens: Token[], start: number): number {
  const quoteChar = source[q];
  let out = '';
  let i = q + 1;
  while (i < source.length) {
    const ch = source[i] as string;
    if (ch === quoteChar) {
      tokens.push({ kind: 'string', text: source.slice(start, i + 1), value: out, pos: start });
      return i + 1;
    }
    if (ch !== '\\') {
      out += ch;
      i++;
      continue;
    }
    const next = source[i + 1];
    if (next === undefined) break;
    if (raw) {
      // As in Python, a raw string keeps the backslash; it only stops the quote from ending it.
      out += ch + next;
      i += 2;
      continue;
    }
    const simple = SIMPLE_ESCAPES[next];
    if (simple !== undefined) {
      out += simple;
      i += 2;
      continue;
    }
    const width = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    if (width > 0) {
      const hex = source.slice(i + 2, i + 2 + width);
      const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === width ? parseInt(hex, 16) : NaN;
      if (!(code <= 0x10ffff)) fail(`invalid \\${next} escape in string (expected ${width} hex digits)`, { pos: i, source });
      out += String.fromCodePoint(code);
      i += 2 + width;
      continue;
    }
    // Unknown escapes are kept as written (Python does the same), so '\d+' reaches a regex intact.
    out += ch + next;
    i += 2;
  }
  return fail('unterminated string', { pos: start, source });
}
