// Every built-in function: results, null handling, type errors and arity errors.
import { describe, expect, it } from 'vitest';
import { compile, FUNCTION_NAMES } from '../../src/expr/index.js';
import { ev, runError, compileError } from './helpers.js';

describe('the function set', () => {
  it('is exactly the documented list', () => {
    expect(FUNCTION_NAMES).toEqual([
      'abs',
      'bool',
      'coalesce',
      'contains',
      'endswith',
      'exists',
      'float',
      'int',
      'join',
      'len',
      'lower',
      'matches',
      'max',
      'min',
      'now',
      'now_epoch',
      'replace',
      'round',
      'search',
      'split',
      'startswith',
      'str',
      'strip',
      'upper',
    ]);
  });

  it('rejects unknown functions at compile time, listing the known ones', () => {
    expect(compileError('exec(x)')).toBe(`unknown function 'exec' (known: ${FUNCTION_NAMES.join(', ')}) at column 1`);
    expect(compileError('x > 1 and toString(x)')).toMatch(/^unknown function 'toString' \(known: abs, bool, .*\) at column 11$/);
    expect(compileError('constructor(x)')).toMatch(/^unknown function 'constructor'/);
  });

  it('checks the number of arguments at compile time', () => {
    expect(compileError('len()')).toBe('len() takes exactly 1 argument (0 given): len(x) at column 1');
    expect(compileError('round(1, 2, 3)')).toBe('round() takes 1 to 2 arguments (3 given): round(x, ndigits=0) at column 1');
    expect(compileError('min()')).toBe('min() takes at least 1 argument (0 given): min(a, b, ...) or min(list) at column 1');
    expect(compileError('now(1)')).toBe('now() takes exactly 0 arguments (1 given): now() at column 1');
    expect(compileError('x and replace(a, b)')).toBe('replace() takes exactly 3 arguments (2 given): replace(s, old, new) at column 7');
  });
});

describe('len', () => {
  it('counts characters, items and keys', () => {
    expect(ev("len('abc')")).toBe(3);
    expect(ev('len(x)', { x: [1, 2] })).toBe(2);
    expect(ev('len(x)', { x: { a: 1, b: 2 } })).toBe(2);
    expect(ev("len('')")).toBe(0);
    expect(ev('len(missing)')).toBe(null);
    expect(runError('len(x)', { x: 5 })).toBe('len() expects a string, list or object, got number at column 1');
  });
});

describe('lower / upper / strip', () => {
  it('transform strings, null stays null', () => {
    expect(ev("lower('CiSco')")).toBe('cisco');
    expect(ev("upper('up')")).toBe('UP');
    expect(ev("strip('  Gi0/1 \\n')")).toBe('Gi0/1');
    expect(ev('lower(x)')).toBe(null);
    expect(ev("lower(vendor) == 'cisco'", {})).toBe(false);
    expect(runError('upper(x)', { x: 1 })).toBe('upper() expects a string, got number at column 1');
    expect(runError('strip(x)', { x: [] })).toBe('strip() expects a string, got list at column 1');
  });
});

describe('str', () => {
  it('writes values as JSON would, strings as they are', () => {
    expect(ev('str(42)')).toBe('42');
    expect(ev('str(1.5)')).toBe('1.5');
    expect(ev('str(3.0)')).toBe('3');
    expect(ev("str('x')")).toBe('x');
    expect(ev('str(true)')).toBe('true');
    expect(ev('str(null)')).toBe('null');
    expect(ev('str(missing)')).toBe('null');
    expect(ev("str([1, 'a', null])")).toBe('[1,"a",null]');
    expect(ev('str(x)', { x: { a: 1 } })).toBe('{"a":1}');
    expect(ev("'port ' + str(ifIndex)", { ifIndex: 7 })).toBe('port 7');
  });
});

describe('int', () => {
  it('truncates numbers and parses decimal strings', () => {
    expect(ev('int(3.9)')).toBe(3);
    expect(ev('int(-3.9)')).toBe(-3);
    expect(ev('int(-0.5)')).toBe(0);
    expect(Object.is(ev('int(-0.5)'), -0)).toBe(false);
    expect(ev("int('42')")).toBe(42);
    expect(ev("int(' -17 ')")).toBe(-17);
    expect(ev("int('+5')")).toBe(5);
    expect(ev('int(true)')).toBe(1);
    expect(ev('int(missing)')).toBe(null);
  });

  it('parses other bases, with an optional 0x / 0o / 0b prefix', () => {
    expect(ev("int('1F', 16)")).toBe(31);
    expect(ev("int('0x1f', 16)")).toBe(31);
    expect(ev("int('-0XFF', 16)")).toBe(-255);
    expect(ev("int('0b101', 2)")).toBe(5);
    expect(ev("int('777', 8)")).toBe(511);
    expect(ev("int('z', 36)")).toBe(35);
    expect(ev('int(mac, 16)', { mac: '00a0c9' })).toBe(41161);
  });

  it('rejects what Python rejects', () => {
    expect(runError("int('12.5')")).toBe("int(): invalid literal for base 10: '12.5' at column 1");
    expect(runError("int('abc')")).toBe("int(): invalid literal for base 10: 'abc' at column 1");
    expect(runError("int('')")).toBe("int(): invalid literal for base 10: '' at column 1");
    expect(runError("int('1G', 16)")).toBe("int(): invalid literal for base 16: '1G' at column 1");
    expect(runError("int('0x10')")).toBe("int(): invalid literal for base 10: '0x10' at column 1");
    expect(runError("int('10', 1)")).toBe('int(): base must be between 2 and 36, got 1 at column 1');
    expect(runError('int(10, 16)')).toBe('int() expects a string when a base is given, got number at column 1');
    expect(runError('int(x)', { x: [1] })).toBe('int() expects a number or a string, got list at column 1');
    expect(runError("int('9' * 400)")).toBe(`int(): '${'9'.repeat(40)}...' is too large at column 1`);
  });
});

describe('float', () => {
  it('parses numbers', () => {
    expect(ev("float('3.5')")).toBe(3.5);
    expect(ev("float(' -1e3 ')")).toBe(-1000);
    expect(ev("float('.5')")).toBe(0.5);
    expect(ev("float('7')")).toBe(7);
    expect(ev('float(2)')).toBe(2);
    expect(ev('float(false)')).toBe(0);
    expect(ev('float(missing)')).toBe(null);
    expect(runError("float('1,5')")).toBe("float(): invalid number '1,5' at column 1");
    expect(runError("float('nan')")).toBe("float(): invalid number 'nan' at column 1");
    expect(runError('float(x)', { x: {} })).toBe('float() expects a number or a string, got object at column 1');
  });
});

describe('bool', () => {
  it('is Python truthiness', () => {
    expect(ev('bool(0)')).toBe(false);
    expect(ev("bool('0')")).toBe(true);
    expect(ev('bool([])')).toBe(false);
    expect(ev('bool(x)', { x: { a: 1 } })).toBe(true);
    expect(ev('bool(missing)')).toBe(false);
  });
});

describe('round', () => {
  it('rounds half to even, like Python', () => {
    expect(ev('round(2.5)')).toBe(2);
    expect(ev('round(3.5)')).toBe(4);
    expect(ev('round(-2.5)')).toBe(-2);
    expect(ev('round(0.5)')).toBe(0);
    expect(ev('round(2.6)')).toBe(3);
    expect(ev('round(-2.6)')).toBe(-3);
  });

  it('takes a number of digits, also negative', () => {
    expect(ev('round(3.14159, 2)')).toBe(3.14);
    expect(ev('round(2.675, 2)')).toBe(2.67); // 2.675 is really 2.67499999...
    expect(ev('round(0.125, 2)')).toBe(0.12); // an exact tie: to the even digit
    expect(ev('round(0.375, 2)')).toBe(0.38);
    expect(ev('round(-0.125, 2)')).toBe(-0.12);
    expect(ev('round(1.005, 2)')).toBe(1); // 1.00499...
    expect(Object.is(ev('round(-0.001, 2)'), 0)).toBe(true);
    expect(ev('round(1234.5, -2)')).toBe(1200);
    expect(ev('round(1250, -2)')).toBe(1200);
    expect(ev('round(x / 1e6, 1)', { x: 123456789 })).toBe(123.5);
    expect(ev('round(1.5, 400)')).toBe(1.5);
    expect(ev('round(missing)')).toBe(null);
    expect(runError("round('1')")).toBe('round() expects a number, got string at column 1');
    expect(runError('round(1.5, 0.5)')).toBe('round(): ndigits must be an integer, got 0.5 at column 1');
  });
});

describe('abs', () => {
  it('is the absolute value', () => {
    expect(ev('abs(-3)')).toBe(3);
    expect(ev('abs(2.5)')).toBe(2.5);
    expect(ev('abs(missing)')).toBe(null);
    expect(runError("abs('-1')")).toBe('abs() expects a number, got string at column 1');
  });
});

describe('min / max', () => {
  it('take several arguments or one list', () => {
    expect(ev('min(3, 1, 2)')).toBe(1);
    expect(ev('max(3, 1, 2)')).toBe(3);
    expect(ev('max(x)', { x: [4, 9, 2] })).toBe(9);
    expect(ev("min(['b', 'a', 'c'])")).toBe('a');
    expect(ev('max(x, 0)', { x: -5 })).toBe(0);
    expect(ev('min([7])')).toBe(7);
  });

  it('refuse empty lists, a single non-list and mixed or null values', () => {
    expect(runError('min([])')).toBe('min() of an empty list at column 1');
    expect(runError('max(5)')).toBe('max() with one argument expects a list, got number at column 1');
    expect(runError("max(1, 'a')")).toBe("'max()' is not supported between 'string' and 'number' at column 1");
    expect(runError('min(x, 1)', {})).toBe("min() cannot compare 'number' and 'null' at column 1");
  });
});

describe('startswith / endswith / contains', () => {
  it('test prefixes and suffixes, also any of a list', () => {
    expect(ev("startswith(ifDescr, 'Gi')", { ifDescr: 'Gi0/1' })).toBe(true);
    expect(ev("startswith(ifDescr, 'Te')", { ifDescr: 'Gi0/1' })).toBe(false);
    expect(ev("endswith(host, '.example.net')", { host: 'r1.example.net' })).toBe(true);
    expect(ev("startswith(ifDescr, ['Te', 'Gi'])", { ifDescr: 'Gi0/1' })).toBe(true);
    expect(ev("endswith(ifDescr, ['/2', '/3'])", { ifDescr: 'Gi0/1' })).toBe(false);
    expect(ev("startswith(missing, 'x')")).toBe(false);
    expect(runError("startswith(x, 'a')", { x: 1 })).toBe('startswith() expects a string, got number at column 1');
    expect(runError('endswith(x, 1)', { x: 'a' })).toBe('endswith() expects a string or a list of strings to look for, got number at column 1');
  });

  it('contains(c, x) is x in c', () => {
    expect(ev("contains(ifDescr, 'Eth')", { ifDescr: 'GigabitEthernet' })).toBe(true);
    expect(ev("contains(tags, 'core')", { tags: ['edge', 'core'] })).toBe(true);
    expect(ev("contains(obj, 'k')", { obj: { k: 1 } })).toBe(true);
    expect(ev("contains(missing, 'k')")).toBe(false);
    expect(runError("contains(x, 'k')", { x: 3 })).toBe("'in' needs a list, string or object on the right, got number at column 1");
  });
});

describe('replace / split / join', () => {
  it('replace replaces every occurrence', () => {
    expect(ev("replace(ifDescr, 'GigabitEthernet', 'Gi')", { ifDescr: 'GigabitEthernet0/1' })).toBe('Gi0/1');
    expect(ev("replace('a.b.c', '.', '/')")).toBe('a/b/c');
    expect(ev("replace('ab', '', '-')")).toBe('-a-b-');
    expect(ev("replace(missing, 'a', 'b')")).toBe(null);
    expect(runError("replace(x, 1, 'b')", { x: 'a' })).toBe('replace() expects a string to replace, got number at column 1');
  });

  it('split on a separator, or on whitespace runs when none is given', () => {
    expect(ev("split('1.3.6.1', '.')")).toEqual(['1', '3', '6', '1']);
    expect(ev("split('a,,b', ',')")).toEqual(['a', '', 'b']);
    expect(ev("split('  up   down\\t x ')")).toEqual(['up', 'down', 'x']);
    expect(ev("split('   ')")).toEqual([]);
    expect(ev("split(oid, '.')[-1]", { oid: '1.3.6.1.2.1.2.2.1.10.7' })).toBe('7');
    expect(ev("split(missing, '.')")).toBe(null);
    expect(runError("split('a', '')")).toBe('split(): empty separator at column 1');
  });

  it('join writes non-strings with str()', () => {
    expect(ev("join(['r1', 'Gi0/1'], ':')")).toBe('r1:Gi0/1');
    expect(ev("join([site, 1, true, null], '-')", { site: 'PAR' })).toBe('PAR-1-true-null');
    expect(ev("join([], ',')")).toBe('');
    expect(ev("join(missing, ',')")).toBe(null);
    expect(runError("join('abc', ',')")).toBe('join() expects a list, got string at column 1');
  });
});

describe('matches / search', () => {
  it('matches finds the pattern anywhere (anchor with ^ and $)', () => {
    expect(ev("matches(ifDescr, 'Ethernet')", { ifDescr: 'GigabitEthernet0/1' })).toBe(true);
    expect(ev("matches(ifDescr, '^Ethernet')", { ifDescr: 'GigabitEthernet0/1' })).toBe(false);
    expect(ev("matches(ifDescr, '^(Gi|Te)[a-zA-Z]*\\d+/\\d+$')", { ifDescr: 'GigabitEthernet0/1' })).toBe(true);
    expect(ev("matches(ip, r'^10\\.')", { ip: '10.1.2.3' })).toBe(true);
    expect(ev("matches(ip, '^10\\.')", { ip: '100.1.2.3' })).toBe(false);
    expect(ev("matches(missing, 'x')")).toBe(false);
    expect(runError("matches(x, 'x')", { x: 5 })).toBe('matches() expects a string, got number at column 1');
  });

  it('is case-sensitive; lower() gives a case-insensitive match', () => {
    expect(ev("matches(x, 'gi')", { x: 'Gi0/1' })).toBe(false);
    expect(ev("matches(lower(x), 'gi')", { x: 'Gi0/1' })).toBe(true);
  });

  it('search returns the match, a numbered or named group, or null', () => {
    const s = { ifDescr: 'GigabitEthernet0/12' };
    expect(ev("search(ifDescr, '\\d+/\\d+')", s)).toBe('0/12');
    expect(ev("search(ifDescr, '(\\d+)/(\\d+)', 2)", s)).toBe('12');
    expect(ev("int(search(ifDescr, '(\\d+)$', 1))", s)).toBe(12);
    expect(ev("search(ifDescr, '(?<slot>\\d+)/(?<port>\\d+)', 'port')", s)).toBe('12');
    expect(ev("search(ifDescr, 'Serial')", s)).toBe(null);
    expect(ev("search(ifDescr, '(x)?Gi', 1)", s)).toBe(null);
    expect(ev("search(missing, 'x')")).toBe(null);
    expect(runError("search(ifDescr, '(\\d+)', 2)", s)).toBe('search(): pattern has no group 2 at column 1');
    expect(runError("search(ifDescr, '(\\d+)', 'port')", s)).toBe("search(): pattern has no group named 'port' at column 1");
  });

  it('needs a constant pattern, checked at compile time', () => {
    expect(compileError('matches(x, y)')).toBe('matches(): the pattern must be a string constant, so it can be checked and compiled once at column 12');
    expect(compileError("matches(x, '(')")).toBe("matches(): invalid regular expression '(': Unterminated group at column 12");
    expect(compileError("matches(x, '(?i)abc')")).toBe(
      "matches(): invalid regular expression '(?i)abc': Invalid group (inline flags such as (?i) are not supported; match on lower(x) instead) at column 12",
    );
    // a constant expression is fine
    expect(ev("matches(x, '^' + 'Gi')", { x: 'Gi0' })).toBe(true);
  });
});

describe('coalesce', () => {
  it('returns the first non-null argument and evaluates no further', () => {
    expect(ev('coalesce(ifAlias, ifName, ifDescr)', { ifName: 'Gi0/1', ifDescr: 'x' })).toBe('Gi0/1');
    expect(ev('coalesce(a, 0)', {})).toBe(0);
    expect(ev('coalesce(a, 0)', { a: false })).toBe(false);
    expect(ev('coalesce(a, b)', {})).toBe(null);
    expect(ev('coalesce(a, b, c)', {})).toBe(null);
    expect(ev('coalesce(a, 1 / x)', { a: 5, x: 0 })).toBe(5);
    expect(ev('coalesce(a, b, 1 / x)', { b: 6, x: 0 })).toBe(6);
    expect(ev('coalesce(x, 0) + 1', {})).toBe(1);
  });
});

describe('now / now_epoch', () => {
  it('give the current time (UTC ISO 8601 and epoch seconds), at each evaluation', () => {
    const before = Date.now() / 1000;
    const f = compile('now_epoch()');
    const t = f({}) as number;
    expect(t).toBeGreaterThanOrEqual(before - 0.001);
    expect(t).toBeLessThanOrEqual(Date.now() / 1000 + 0.001);
    const iso = ev('now()') as string;
    expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(iso) / 1000 - before)).toBeLessThan(5);
    // not frozen at compile time
    const g = compile('now_epoch()');
    const first = g({}) as number;
    const end = Date.now() + 5;
    while (Date.now() < end) {
      /* wait a few ms */
    }
    expect(g({}) as number).toBeGreaterThan(first);
  });
});
