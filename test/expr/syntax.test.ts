// Literals, tokens, the parser's error messages and locations.
import { describe, expect, it } from 'vitest';
import { compile, ExprError } from '../../src/expr/index.js';
import { ev, errorOf } from './helpers.js';

const compileError = (src: string): ExprError => errorOf(() => compile(src));

describe('number literals', () => {
  it('reads integers, decimals and exponents', () => {
    expect(ev('42')).toBe(42);
    expect(ev('0')).toBe(0);
    expect(ev('3.25')).toBe(3.25);
    expect(ev('1e3')).toBe(1000);
    expect(ev('1E3')).toBe(1000);
    expect(ev('2.5e-3')).toBe(0.0025);
    expect(ev('1e+2')).toBe(100);
  });

  it('accepts a leading dot (.5) but not a trailing one (5.)', () => {
    expect(ev('.5')).toBe(0.5);
    expect(ev('x * .5', { x: 4 })).toBe(2);
    expect(compileError('5.').message).toBe("expected a field name after '.', found end of expression at column 3");
  });

  it('rejects hex literals with a hint, and letters glued to digits', () => {
    expect(compileError('0x1F').message).toBe("invalid number '0x1F'; hex literals are not supported, write int('1F', 16) at column 1");
    expect(compileError('x > 12abc').message).toBe("invalid number '12abc' at column 5");
  });

  it('rejects integers that a 64-bit float cannot hold exactly, and out-of-range numbers', () => {
    expect(ev('9007199254740991')).toBe(9007199254740991);
    expect(compileError('9007199254740993').message).toBe(
      "integer '9007199254740993' is too large (integers are exact only up to 9007199254740991) at column 1",
    );
    expect(compileError('1e400').message).toBe("number '1e400' is out of range at column 1");
    expect(ev('1.5e300')).toBe(1.5e300);
  });
});

describe('string literals', () => {
  it('accepts both quote styles', () => {
    expect(ev("'up'")).toBe('up');
    expect(ev('"up"')).toBe('up');
    expect(ev(`"it's"`)).toBe("it's");
    expect(ev(`'say "hi"'`)).toBe('say "hi"');
    expect(ev("''")).toBe('');
  });

  it('processes the escapes in both quote styles', () => {
    for (const q of ["'", '"']) {
      expect(ev(`${q}a\\nb${q}`)).toBe('a\nb');
      expect(ev(`${q}a\\tb${q}`)).toBe('a\tb');
      expect(ev(`${q}a\\rb${q}`)).toBe('a\rb');
      expect(ev(`${q}a\\\\b${q}`)).toBe('a\\b');
      expect(ev(`${q}\\'${q}`)).toBe("'");
      expect(ev(`${q}\\"${q}`)).toBe('"');
      expect(ev(`${q}\\u00e9t\\u00E9${q}`)).toBe('été');
      expect(ev(`${q}\\x41${q}`)).toBe('A');
      expect(ev(`${q}\\U0001F4E1${q}`)).toBe('📡');
      expect(ev(`${q}\\0${q}`)).toBe('\0');
    }
  });

  it('keeps unknown escapes as written, so regular expressions survive', () => {
    expect(ev("'\\d+'")).toBe('\\d+');
    expect(ev("'\\b'")).toBe('\\b');
    expect(ev("'\\d+' == '\\\\d+'")).toBe(true);
  });

  it('supports raw strings r"..."', () => {
    expect(ev("r'\\n'")).toBe('\\n');
    expect(ev('R"a\\tb"')).toBe('a\\tb');
    expect(ev("r'it\\'s'")).toBe("it\\'s");
    // r followed by something else is still a name
    expect(ev('r', { r: 1 })).toBe(1);
  });

  it('keeps unicode text and newlines inside strings', () => {
    expect(ev("'débit ↑ 📶'")).toBe('débit ↑ 📶');
    expect(ev("'line1\nline2'")).toBe('line1\nline2');
    expect(ev("len('📶')")).toBe(2); // UTF-16 code units, like JavaScript
  });

  it('rejects bad \\u escapes and unterminated strings, pointing at them', () => {
    expect(compileError("'ab\\u12'").message).toBe('invalid \\u escape in string (expected 4 hex digits) at column 4');
    expect(compileError("'\\U00110000'").message).toBe('invalid \\U escape in string (expected 8 hex digits) at column 2');
    const e = compileError("name == 'abc");
    expect(e.message).toBe('unterminated string at column 9');
    expect(e.position).toBe(8);
    expect(compileError('"abc\\"').message).toBe('unterminated string at column 1');
    expect(compileError("'abc\\").message).toBe('unterminated string at column 1');
  });
});

describe('other literals', () => {
  it('reads true/false/null and the Python spellings', () => {
    expect(ev('true')).toBe(true);
    expect(ev('True')).toBe(true);
    expect(ev('false')).toBe(false);
    expect(ev('False')).toBe(false);
    expect(ev('null')).toBe(null);
    expect(ev('None')).toBe(null);
  });

  it('builds lists, nested and with a trailing comma', () => {
    expect(ev("[1, 2, 'a']")).toEqual([1, 2, 'a']);
    expect(ev('[]')).toEqual([]);
    expect(ev('[1, [2, [3]],]')).toEqual([1, [2, [3]]]);
    expect(ev('[x, x + 1]', { x: 5 })).toEqual([5, 6]);
  });
});

describe('whitespace and layout', () => {
  it('ignores spaces, tabs and newlines between tokens', () => {
    expect(ev('  1\t+\n2  ')).toBe(3);
    expect(ev('len (x)', { x: 'abc' })).toBe(3);
  });
});

describe('syntax errors', () => {
  it('names the unexpected token and its column', () => {
    const e = compileError('(a and b))');
    expect(e.message).toBe("unexpected token ')' at column 10");
    expect(e.position).toBe(9);
    expect(compileError('1 +').message).toBe('unexpected end of expression at column 4');
    expect(compileError('x > > 1').message).toBe("unexpected token '>' at column 5");
    expect(compileError('a b').message).toBe("unexpected name 'b' at column 3");
    expect(compileError('and').message).toBe("unexpected 'and' at column 1");
    expect(compileError('x if y').message).toBe("expected 'else' after the condition of 'x if condition else y', found the end of the expression at column 7");
  });

  it('says where an unclosed bracket was opened', () => {
    expect(compileError('(1 + 2').message).toBe("expected ')' to close the '(' opened at column 1, found the end of the expression at column 7");
    expect(compileError('[1, 2').message).toBe("expected ']' to close the list opened at column 1, found the end of the expression at column 6");
    expect(compileError('len(x').message).toBe("expected ')' to close the call to len() opened at column 4, found the end of the expression at column 6");
    expect(compileError('a[0').message).toBe("expected ']' to close the index, found the end of the expression at column 4");
  });

  it('reports line and column for multi-line expressions', () => {
    const e = compileError('ifOperStatus == 1\nand ifInErrors >> 0');
    expect(e.message).toBe('bitwise operators are not supported at line 2, column 16');
    expect(e.position).toBe(33);
  });

  it('explains operators from other languages', () => {
    expect(compileError('a && b').message).toBe("'&&' is not an operator; use 'and' at column 3");
    expect(compileError('a || b').message).toBe("'||' is not an operator; use 'or' at column 3");
    expect(compileError('!a').message).toBe("'!' is not an operator; use 'not' at column 1");
    expect(compileError('a === 1').message).toBe("'===' is not an operator; use '==' at column 3");
    expect(compileError('a = 1').message).toBe("'=' is not allowed (there is no assignment); use '==' to compare at column 3");
    expect(compileError('a & 1').message).toBe('bitwise operators are not supported at column 3');
    expect(compileError('a[1:2]').message).toBe("':' is not supported (there are no slices, dictionaries or lambdas) at column 4");
    expect(compileError('a; b').message).toBe("';' is not allowed: an expression is a single expression at column 2");
  });

  it('rejects characters outside the language, with a hint for non-ASCII names', () => {
    expect(compileError('débit > 1').message).toBe(
      "unexpected character 'é' (names may contain only ASCII letters, digits and '_'; write $['name'] for any other field name) at column 2",
    );
    expect(compileError('x > `1`').message).toBe("unexpected character '`' at column 5");
    expect(compileError('x > {}').message).toBe("unexpected character '{' at column 5");
    expect(compileError('x\u0000').message).toBe('unexpected character U+0000 at column 2');
  });

  it('rejects empty and non-string sources', () => {
    expect(compileError('').message).toBe('empty expression');
    expect(compileError('   \n ').message).toBe('empty expression');
    expect(errorOf(() => compile(42 as unknown as string)).message).toBe('expression must be a string, got number');
  });

  it('gives errors without a position for the whole expression', () => {
    expect(compileError('').position).toBeUndefined();
  });
});
