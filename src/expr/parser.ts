// Recursive-descent parser, one function per precedence level (lowest first), following Python:
//   conditional  x if c else y
//   or, and, not
//   comparisons  == != < <= > >= in, not in, is, is not   (chained: 1 < x < 5)
//   + -,  * / // %,  unary + -,  **,  postfix .name [index] call(...)
// Hostile input is bounded here: nesting depth (recursion), node count and node height.
import type { ArithOp, CompareOp, Literal, Node, NodeOf } from './ast.js';
import { describeLocation, fail, quote, type Site } from './errors.js';
import { tokenize, type Token } from './tokenizer.js';

export interface ParseLimits {
  /** Parentheses, brackets, calls, unary operators and conditionals nested inside each other. */
  readonly maxDepth: number;
  /** Total syntax nodes. */
  readonly maxNodes: number;
  /** Height of the tree, which a flat chain like a + b + c + ... grows one level per operator. */
  readonly maxHeight: number;
}

/** Names that lead into JavaScript internals; rejected outright rather than silently null. */
const FORBIDDEN_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Fails for a field name that leads into JavaScript internals (also used by the compiler for computed constant keys). */
export function checkFieldName(name: string, site: Site): void {
  if (FORBIDDEN_NAMES.has(name)) fail(`'${name}' is not allowed: expressions cannot reach JavaScript internals`, site);
}

const LITERAL_KEYWORDS: Readonly<Record<string, Literal>> = {
  true: true,
  True: true,
  false: false,
  False: false,
  null: null,
  None: null,
};

type Distribute<N> = N extends Node ? Omit<N, 'height'> : never;
type NodeInput = Distribute<Node>;

export function parse(source: string, limits: ParseLimits): Node {
  return new Parser(source, limits).parseAll();
}

class Parser {
  private readonly tokens: Token[];
  private i = 0;
  private depth = 0;
  private nodes = 0;

  constructor(
    private readonly source: string,
    private readonly limits: ParseLimits,
  ) {
    this.tokens = tokenize(source);
  }

  parseAll(): Node {
    const node = this.expression();
    const t = this.peek();
    if (t.kind !== 'eof') this.unexpected(t);
    return node;
  }

  // ---- limits and node construction -------------------------------------------------------------

  /** Runs a nested parse one level deeper; the depth bound is what stops ((((...)))) bombs. */
  private nested<T>(f: () => T): T {
    if (++this.depth > this.limits.maxDepth) {
      fail(`expression is nested too deeply (more than ${this.limits.maxDepth} levels)`, this.site(this.peek().pos));
    }
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  private make<N extends NodeInput>(input: N, children: readonly Node[]): N & Node {
    if (++this.nodes > this.limits.maxNodes) {
      fail(`expression is too large (more than ${this.limits.maxNodes} syntax elements)`, this.site(input.pos));
    }
    let height = 0;
    for (const c of children) if (c.height > height) height = c.height;
    height += 1;
    if (height > this.limits.maxHeight) {
      fail(`expression is too complex (operator chain deeper than ${this.limits.maxHeight})`, this.site(input.pos));
    }
    return { ...input, height } as N & Node;
  }

  // ---- token helpers ----------------------------------------------------------------------------

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)] as Token;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.i++;
    return t;
  }

  /** Is the current token the operator or keyword `text`? */
  private at(text: string, offset = 0): boolean {
    const t = this.peek(offset);
    return (t.kind === 'op' || t.kind === 'keyword') && t.text === text;
  }

  private accept(text: string): boolean {
    if (!this.at(text)) return false;
    this.i++;
    return true;
  }

  private expect(text: string, context: string): Token {
    const t = this.peek();
    if (!this.at(text)) {
      const found = t.kind === 'eof' ? 'the end of the expression' : `${describe(t)}`;
      fail(`expected '${text}' ${context}, found ${found}`, this.site(t.pos));
    }
    return this.next();
  }

  private unexpected(t: Token): never {
    if (t.kind === 'eof') fail('unexpected end of expression', this.site(t.pos));
    return fail(`unexpected ${describe(t)}`, this.site(t.pos));
  }

  private site(pos: number) {
    return { pos, source: this.source };
  }

  // ---- grammar, lowest precedence first ---------------------------------------------------------

  private expression(): Node {
    return this.nested(() => this.conditional());
  }

  private conditional(): Node {
    const then = this.or();
    if (!this.at('if')) return then;
    const pos = this.next().pos;
    const test = this.or();
    this.expect('else', "after the condition of 'x if condition else y'");
    const otherwise = this.expression();
    return this.make({ kind: 'conditional', test, then, otherwise, pos }, [test, then, otherwise]);
  }

  private or(): Node {
    return this.logical('or', () => this.and());
  }

  private and(): Node {
    return this.logical('and', () => this.not());
  }

  private logical(op: 'and' | 'or', operand: () => Node): Node {
    const first = operand();
    if (!this.at(op)) return first;
    const operands = [first];
    const pos = this.peek().pos;
    while (this.accept(op)) operands.push(operand());
    return this.make({ kind: 'logical', op, operands, pos }, operands);
  }

  private not(): Node {
    if (!this.at('not')) return this.comparison();
    const pos = this.next().pos;
    const operand = this.nested(() => this.not());
    return this.make({ kind: 'unary', op: 'not', operand, pos }, [operand]);
  }

  private comparison(): Node {
    const first = this.sum();
    const operands: Node[] = [first];
    const ops: CompareOp[] = [];
    const sites: number[] = [];
    for (;;) {
      const t = this.peek();
      let op: CompareOp | undefined;
      if (t.kind === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(t.text)) op = t.text as CompareOp;
      else if (this.at('in')) op = 'in';
      else if (this.at('not') && this.at('in', 1)) op = 'not in';
      else if (this.at('is')) op = this.at('not', 1) ? 'is not' : 'is';
      if (op === undefined) break;
      this.i += op.includes(' ') ? 2 : 1;
      ops.push(op);
      sites.push(t.pos);
      operands.push(this.sum());
    }
    if (ops.length === 0) return first;
    return this.make({ kind: 'compare', operands, ops, sites, pos: sites[0] as number }, operands);
  }

  private sum(): Node {
    return this.arithmetic(['+', '-'], () => this.term());
  }

  private term(): Node {
    return this.arithmetic(['*', '/', '//', '%'], () => this.unary());
  }

  /** Left-associative binary level: iterates rather than recursing, the height bound caps it. */
  private arithmetic(ops: readonly string[], operand: () => Node): Node {
    let left = operand();
    for (;;) {
      const t = this.peek();
      if (t.kind !== 'op' || !ops.includes(t.text)) return left;
      this.i++;
      const right = operand();
      left = this.make({ kind: 'arith', op: t.text as ArithOp, left, right, pos: t.pos }, [left, right]);
    }
  }

  private unary(): Node {
    const t = this.peek();
    if (t.kind === 'op' && (t.text === '-' || t.text === '+')) {
      this.i++;
      const operand = this.nested(() => this.unary());
      return this.make({ kind: 'unary', op: t.text, operand, pos: t.pos }, [operand]);
    }
    return this.power();
  }

  /** `**` binds tighter than a unary minus on its left and is right-associative: -2**2 == -4. */
  private power(): Node {
    const base = this.postfix();
    if (!this.at('**')) return base;
    const pos = this.next().pos;
    const exponent = this.nested(() => this.unary());
    return this.make({ kind: 'arith', op: '**', left: base, right: exponent, pos }, [base, exponent]);
  }

  private postfix(): Node {
    let node = this.atom();
    for (;;) {
      const t = this.peek();
      if (this.at('.')) {
        this.i++;
        const name = this.peek();
        // Keywords are fine as keys: record.type, x.in, ... are plain data.
        if (name.kind !== 'name' && name.kind !== 'keyword') {
          const hint = name.kind === 'number' ? `; write [${name.text}] for a list item` : '';
          fail(`expected a field name after '.', found ${describe(name)}${hint}`, this.site(name.pos));
        }
        this.i++;
        this.checkName(name.text, name.pos);
        if (this.at('(')) {
          fail(`'.${name.text}(...)': there are no methods; only the built-in functions can be called, e.g. lower(x)`, this.site(name.pos));
        }
        node = this.make({ kind: 'member', object: node, key: name.text, pos: t.pos }, [node]);
      } else if (this.at('[')) {
        this.i++;
        const index = this.expression();
        if (index.kind === 'literal' && typeof index.value === 'string') this.checkName(index.value, index.pos);
        this.expect(']', 'to close the index');
        node = this.make({ kind: 'index', object: node, index, pos: t.pos }, [node, index]);
      } else if (this.at('(')) {
        fail('only the built-in functions can be called, by name, e.g. lower(x)', this.site(t.pos));
      } else {
        return node;
      }
    }
  }

  private atom(): Node {
    const t = this.next();
    switch (t.kind) {
      case 'number':
      case 'string':
        return this.make({ kind: 'literal', value: t.value as number | string, pos: t.pos }, []);
      case 'name':
        if (this.at('(')) return this.call(t);
        this.checkName(t.text, t.pos);
        return this.make({ kind: 'name', name: t.text, pos: t.pos }, []);
      case 'keyword':
        if (t.text in LITERAL_KEYWORDS) {
          return this.make({ kind: 'literal', value: LITERAL_KEYWORDS[t.text] as Literal, pos: t.pos }, []);
        }
        return this.unexpected(t);
      case 'op':
        if (t.text === '(') {
          const inner = this.expression();
          this.expect(')', `to close the '(' ${this.where(t.pos)}`);
          return inner;
        }
        if (t.text === '[') return this.list(t);
        if (t.text === '$') {
          if (!this.at('.') && !this.at('[')) {
            fail("'$' stands for the whole record and must be followed by ['field name'] or .name", this.site(t.pos));
          }
          return this.make({ kind: 'root', pos: t.pos }, []);
        }
        return this.unexpected(t);
      case 'eof':
        return this.unexpected(t);
    }
  }

  private list(open: Token): NodeOf<'list'> {
    const items = this.commaSeparated(']', `to close the list ${this.where(open.pos)}`);
    return this.make({ kind: 'list', items, pos: open.pos }, items);
  }

  private call(name: Token): NodeOf<'call'> {
    const open = this.next();
    const args = this.commaSeparated(')', `to close the call to ${name.text}() ${this.where(open.pos)}`);
    return this.make({ kind: 'call', name: name.text, args, pos: name.pos }, args);
  }

  /** Items up to `close`; a trailing comma is allowed, as in Python. */
  private commaSeparated(close: string, context: string): Node[] {
    const items: Node[] = [];
    while (!this.at(close)) {
      items.push(this.expression());
      if (!this.accept(',')) break;
    }
    this.expect(close, context);
    return items;
  }

  private checkName(name: string, pos: number): void {
    checkFieldName(name, this.site(pos));
  }

  private where(pos: number): string {
    return `opened ${describeLocation(this.source, pos)}`;
  }
}

function describe(t: Token): string {
  switch (t.kind) {
    case 'number':
      return `number ${t.text}`;
    case 'string':
      return `string ${quote(String(t.value))}`;
    case 'name':
      return `name '${t.text}'`;
    case 'keyword':
      return `'${t.text}'`;
    case 'op':
      return `token '${t.text}'`;
    case 'eof':
      return 'end of expression';
  }
}
