// Semantics of every operator, Python precedence, truthiness, comparisons and membership.
import { describe, expect, it } from 'vitest';
import { compile, truthy, type Scope } from '../../src/expr/index.js';
import { ev, runError } from './helpers.js';

describe('arithmetic', () => {
  it('adds, subtracts, multiplies', () => {
    expect(ev('1 + 2')).toBe(3);
    expect(ev('x - 10', { x: 4 })).toBe(-6);
    expect(ev('x * 8', { x: 1.5 })).toBe(12);
    expect(ev('0.1 + 0.2')).toBeCloseTo(0.3, 15);
  });

  it('/ is true division, // floors, % takes the sign of the divisor (Python)', () => {
    expect(ev('7 / 2')).toBe(3.5);
    expect(ev('7 // 2')).toBe(3);
    expect(ev('-7 // 2')).toBe(-4);
    expect(ev('7 // -2')).toBe(-4);
    expect(ev('7.5 // 2')).toBe(3);
    expect(ev('7 % 3')).toBe(1);
    expect(ev('-7 % 3')).toBe(2);
    expect(ev('7 % -3')).toBe(-2);
    expect(ev('-7 % -3')).toBe(-1);
    expect(ev('6 % 3')).toBe(0);
    expect(ev('5.5 % 2')).toBe(1.5);
  });

  it('** is right-associative and binds tighter than unary minus on its left', () => {
    expect(ev('2 ** 10')).toBe(1024);
    expect(ev('2 ** 3 ** 2')).toBe(512);
    expect(ev('-2 ** 2')).toBe(-4);
    expect(ev('(-2) ** 2')).toBe(4);
    expect(ev('2 ** -1')).toBe(0.5);
    expect(ev('4 ** 0.5')).toBe(2);
  });

  it('** refuses results that do not fit or are not real', () => {
    expect(runError('x ** 1000', { x: 10 })).toBe('result of 10 ** 1000 is too large at column 3');
    expect(runError('x ** 0.5', { x: -4 })).toBe('-4 ** 0.5 is not a real number at column 3');
    expect(runError('x ** -1', { x: 0 })).toBe('zero cannot be raised to a negative power at column 3');
  });

  it('refuses division by zero', () => {
    expect(runError('x / 0', { x: 1 })).toBe('division by zero at column 3');
    expect(runError('x // y', { x: 1, y: 0 })).toBe('integer division by zero at column 3');
    expect(runError('x % 0', { x: 1 })).toBe('modulo by zero at column 3');
  });

  it('+ concatenates strings and lists; * repeats them by an integer', () => {
    expect(ev("'Gi' + '0/1'")).toBe('Gi0/1');
    expect(ev('[1] + [2, 3]')).toEqual([1, 2, 3]);
    expect(ev("'-' * 3")).toBe('---');
    expect(ev("3 * 'ab'")).toBe('ababab');
    expect(ev('[0] * 3')).toEqual([0, 0, 0]);
    expect(ev("'a' * -2")).toBe('');
    expect(runError("'a' * x", { x: 1.5 })).toBe('can only repeat a string by an integer, got 1.5 at column 5');
  });

  it('names the operator and both types on a type error', () => {
    expect(runError('"a" - 1')).toBe("unsupported operand types for -: 'string' and 'number' at column 5");
    expect(runError('x + 1', { x: 'a' })).toBe("unsupported operand types for +: 'string' and 'number' at column 3");
    expect(runError('x + 1', {})).toBe("unsupported operand types for +: 'null' and 'number' at column 3");
    expect(runError('x * y', { x: [1], y: [2] })).toBe("unsupported operand types for *: 'list' and 'list' at column 3");
    expect(runError('x / 2', { x: true })).toBe("unsupported operand types for /: 'bool' and 'number' at column 3");
    expect(runError('x // 2', { x: {} })).toBe("unsupported operand types for //: 'object' and 'number' at column 3");
    expect(runError('-x', { x: 'a' })).toBe("bad operand type for unary -: 'string' at column 1");
    expect(runError('+x', { x: null })).toBe("bad operand type for unary +: 'null' at column 1");
  });

  it('does not treat booleans as numbers', () => {
    expect(runError('true + 1')).toBe("unsupported operand types for +: 'bool' and 'number' at column 6");
    expect(ev('true == 1')).toBe(false);
  });

  it('unary minus and plus', () => {
    expect(ev('-x', { x: 3 })).toBe(-3);
    expect(ev('- -x', { x: 3 })).toBe(3);
    expect(ev('+x', { x: 3 })).toBe(3);
  });
});

describe('precedence (Python)', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3],
    ['2 * 3 % 4', 2],
    ['100 / 10 / 5', 2],
    ['-3 ** 2 + 1', -8],
    ['1 + 2 == 3', true],
    ['not 1 == 2', true],
    ['not 1 + 1 == 2', false],
    ['true or false and false', true],
    ['(true or false) and false', false],
    ['not true or true', true],
    ['not (true or true)', false],
    ["'a' if 1 > 2 else 'b' + 'c'", 'bc'],
    ['1 if true else 2 if true else 3', 1],
    ['1 if false else 2 if false else 3', 3],
    ['1 + 1 if false else 5', 5],
    ['2 in [1, 2] and 3 not in [1, 2]', true],
    ['-x.y', -4],
    ['x.y ** 2', 16],
  ] as const)('%s', (src, expected) => {
    expect(ev(src, { x: { y: 4 } })).toBe(expected);
  });
});

describe('and / or / not', () => {
  it('return the deciding operand, like Python', () => {
    expect(ev("x or 'default'", { x: '' })).toBe('default');
    expect(ev("x or 'default'", { x: 'set' })).toBe('set');
    expect(ev('x and y', { x: 0, y: 5 })).toBe(0);
    expect(ev('x and y', { x: 1, y: 5 })).toBe(5);
    expect(ev('a or b or c', { a: null, b: 0, c: [] })).toEqual([]);
    expect(ev('a and b and c', { a: 1, b: 'x', c: 3 })).toBe(3);
    expect(ev('a and b and c', { a: 1, b: '', c: 3 })).toBe('');
    expect(ev('a or b or c', { a: 0, b: 'hit', c: 3 })).toBe('hit');
  });

  it('short-circuit: the right side is not evaluated', () => {
    expect(ev('false and 1 / x', { x: 0 })).toBe(false);
    expect(ev('true or 1 / x', { x: 0 })).toBe(true);
    expect(ev('x > 0 and 10 / x > 1', { x: 0 })).toBe(false);
    expect(ev('a or b or 1 / x', { a: 0, b: 2, x: 0 })).toBe(2);
    expect(ev('a and b and 1 / x', { a: 1, b: 0, x: 0 })).toBe(0);
    expect(runError('a and b and 1 / x', { a: 1, b: 1, x: 0 })).toBe('division by zero at column 15');
  });

  it('not uses Python truthiness', () => {
    for (const falsy of [null, false, 0, '', [], {}]) expect(ev('not x', { x: falsy })).toBe(true);
    for (const t of [true, 1, -1, 'a', [0], { a: null }, 0.1]) expect(ev('not x', { x: t })).toBe(false);
    expect(ev('not missing')).toBe(true);
  });
});

describe('truthy()', () => {
  it('follows Python', () => {
    expect([null, undefined, false, 0, -0, '', [], {}].map(truthy)).toEqual(Array(8).fill(false));
    expect([true, 1, -2, 'x', ' ', [null], { k: 0 }, NaN, Infinity].map(truthy)).toEqual(Array(9).fill(true));
  });

  it('does not count inherited properties', () => {
    expect(truthy(Object.create({ inherited: 1 }))).toBe(false);
  });
});

describe('conditional expression', () => {
  it('chooses a branch and evaluates only that one', () => {
    expect(ev("'up' if s == 1 else 'down'", { s: 1 })).toBe('up');
    expect(ev("'up' if s == 1 else 'down'", { s: 2 })).toBe('down');
    expect(ev('1 / x if x else 0', { x: 0 })).toBe(0);
    expect(ev('x if true else 1 / 0', { x: 7 })).toBe(7);
  });
});

describe('comparisons', () => {
  it('compare numbers and strings', () => {
    expect(ev('x > 5', { x: 6 })).toBe(true);
    expect(ev('x > 5', { x: 5 })).toBe(false);
    expect(ev('x >= 5', { x: 5 })).toBe(true);
    expect(ev('x < 5', { x: 4.9 })).toBe(true);
    expect(ev('x <= 5', { x: 5.1 })).toBe(false);
    expect(ev('5 < x', { x: 6 })).toBe(true);
    expect(ev('x < y', { x: 1, y: 2 })).toBe(true);
    expect(ev("'abc' < 'abd'")).toBe(true);
    expect(ev("name >= 'm'", { name: 'router' })).toBe(true);
    expect(ev("'B' < 'a'")).toBe(true);
  });

  it('order lists lexicographically', () => {
    expect(ev('[1, 2] < [1, 3]')).toBe(true);
    expect(ev('[1, 2] < [1, 2, 0]')).toBe(true);
    expect(ev('[2] > [1, 9]')).toBe(true);
    expect(ev('[1, 2] <= [1, 2]')).toBe(true);
  });

  it('refuse to order incompatible types, naming the operator and types', () => {
    expect(runError("x > 'a'", { x: 1 })).toBe("'>' is not supported between 'number' and 'string' at column 3");
    expect(runError('x < 5', { x: '3' })).toBe("'<' is not supported between 'string' and 'number' at column 3");
    expect(runError('x <= y', { x: true, y: false })).toBe("'<=' is not supported between 'bool' and 'bool' at column 3");
    expect(runError('x >= [1]', { x: {} })).toBe("'>=' is not supported between 'object' and 'list' at column 3");
  });

  it('make every ordering with null (a missing field) false instead of failing', () => {
    for (const op of ['<', '<=', '>', '>=']) {
      expect(ev(`missing ${op} 5`)).toBe(false);
      expect(ev(`5 ${op} missing`)).toBe(false);
      expect(ev(`x ${op} null`, { x: 'a' })).toBe(false);
    }
  });

  it('== across types is just false; lists and objects compare by content', () => {
    expect(ev("1 == '1'")).toBe(false);
    expect(ev("1 != '1'")).toBe(true);
    expect(ev('1 == 1.0')).toBe(true);
    expect(ev('null == false')).toBe(false);
    expect(ev('0 == false')).toBe(false);
    expect(ev('x == null', {})).toBe(true);
    expect(ev('x == None', { x: null })).toBe(true);
    expect(ev('x != null', { x: 0 })).toBe(true);
    expect(ev('x == [1, [2]]', { x: [1, [2]] })).toBe(true);
    expect(ev('x == [1, 2]', { x: [2, 1] })).toBe(false);
    expect(ev('x == y', { x: { a: 1, b: [2] }, y: { b: [2], a: 1 } })).toBe(true);
    expect(ev('x == y', { x: { a: 1 }, y: { a: 1, b: 2 } })).toBe(false);
    expect(ev('x == y', { x: { a: 1 }, y: [1] })).toBe(false);
    expect(ev('x != y', { x: 'a', y: 'a' })).toBe(false);
  });

  it('is / is not behave as == / != (for x is None)', () => {
    expect(ev('x is None', {})).toBe(true);
    expect(ev('x is not None', { x: 0 })).toBe(true);
    expect(ev('x is null', { x: 'a' })).toBe(false);
    expect(ev('x is not null', {})).toBe(false);
  });

  it('chain like Python, evaluating each operand once', () => {
    expect(ev('1 < x < 5', { x: 3 })).toBe(true);
    expect(ev('1 < x < 5', { x: 5 })).toBe(false);
    expect(ev('1 < x < 5', { x: 1 })).toBe(false);
    expect(ev('0 <= x <= 100 != x', { x: 50 })).toBe(true);
    expect(ev('0 <= x <= 100 != x', { x: 100 })).toBe(false);
    expect(ev('a == b == c', { a: 1, b: 1, c: 1 })).toBe(true);
    expect(ev('a == b == c', { a: 1, b: 1, c: 2 })).toBe(false);
    expect(ev('1 < 2 > 0')).toBe(true);
    expect(ev('x < y < z', { x: 'a', y: 'b', z: 'c' })).toBe(true);
    expect(ev('1 < x in [2, 3]', { x: 2 })).toBe(true);
    // the middle operand is read once (counted through a proxy scope)
    const reads: string[] = [];
    const scope = new Proxy({ x: 3 } as Scope, {
      get(target, key, receiver) {
        reads.push(String(key));
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    expect(compile('1 < x < 5')(scope)).toBe(true);
    expect(reads).toEqual(['x']);
    // stops at the first false comparison: the type error in the second is never reached
    expect(ev("5 < x < 'z'", { x: 1 })).toBe(false);
    expect(runError("0 < x < 'z'", { x: 1 })).toBe("'<' is not supported between 'number' and 'string' at column 7");
  });
});

describe('membership', () => {
  it('in a list, with == semantics', () => {
    expect(ev("severity in ['critical', 'major']", { severity: 'major' })).toBe(true);
    expect(ev("severity in ['critical', 'major']", { severity: 'minor' })).toBe(false);
    expect(ev("severity not in ['critical', 'major']", { severity: 'minor' })).toBe(true);
    expect(ev('x in [1, 2, 3]', { x: 2.0 })).toBe(true);
    expect(ev('x in [1, 2, 3]', { x: '2' })).toBe(false);
    expect(ev('x in [null, 1]', {})).toBe(true);
    expect(ev('x in [true]', { x: 1 })).toBe(false);
    expect(ev('[1] in [[1], [2]]')).toBe(true);
    expect(ev('x in [[1], [2]]', { x: [2] })).toBe(true);
    expect(ev('x in y', { x: 3, y: [1, 2, 3] })).toBe(true);
    expect(ev('x in [a, b]', { x: 3, a: 1, b: 3 })).toBe(true);
  });

  it('of a substring in a string', () => {
    expect(ev("'Eth' in ifDescr", { ifDescr: 'GigabitEthernet0/1' })).toBe(true);
    expect(ev("'eth' in ifDescr", { ifDescr: 'GigabitEthernet0/1' })).toBe(false);
    expect(ev("x in 'GigabitEthernet'", { x: 'bit' })).toBe(true);
    expect(ev("'' in 'abc'")).toBe(true);
    expect(runError("x in 'abc'", { x: 1 })).toBe("'in <string>' requires a string on the left, got number at column 3");
  });

  it('of a key in an object (own keys only)', () => {
    expect(ev("'a' in x", { x: { a: null } })).toBe(true);
    expect(ev("'b' in x", { x: { a: 1 } })).toBe(false);
    expect(ev("'toString' in x", { x: {} })).toBe(false);
    expect(ev("'a' not in x", { x: { a: 1 } })).toBe(false);
  });

  it('in null (a missing field) is false; in a number is an error', () => {
    expect(ev("'a' in missing")).toBe(false);
    expect(ev("'a' not in missing")).toBe(true);
    expect(runError('1 in x', { x: 5 })).toBe("'in' needs a list, string or object on the right, got number at column 3");
  });
});
