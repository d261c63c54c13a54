// A recursive-descent parser for the ASN.1 (X.680) subset that charging-record modules use:
// module header with tagging default, IMPORTS/EXPORTS, type and value assignments, SEQUENCE / SET /
// CHOICE / SEQUENCE OF / SET OF, OPTIONAL / DEFAULT, tags, extension markers and groups,
// ENUMERATED, named numbers and bits, constraints (value range, SIZE, FROM). Information object
// classes and parameterized assignments are skipped (they never reach a decoded record).
import type { Bound, ComponentAst, ConstraintAst, ModuleAst, NamedNumber, TypeAst, ValueAst } from './ast.js';
import { Asn1SyntaxError, tokenize, type Token } from './lexer.js';

const STRING_TYPES = new Set([
  'IA5String',
  'UTF8String',
  'PrintableString',
  'VisibleString',
  'NumericString',
  'BMPString',
  'UniversalString',
  'TeletexString',
  'T61String',
  'GraphicString',
  'GeneralString',
  'VideotexString',
  'ISO646String',
  'ObjectDescriptor',
]);
const SIMPLE_TYPES = new Set(['BOOLEAN', 'NULL', 'REAL', 'GeneralizedTime', 'UTCTime', 'RELATIVE-OID', ...STRING_TYPES]);
const isUpper = (s: string) => /^[A-Z]/.test(s);
const isLower = (s: string) => /^[a-z]/.test(s);
// Information-object-class notation: assignments whose right side starts with these are skipped.
const SKIP_RHS = new Set(['CLASS', 'TYPE-IDENTIFIER', 'ABSTRACT-SYNTAX']);

class Parser {
  private i = 0;
  private extGroup = 0;
  constructor(
    private readonly toks: Token[],
    private readonly file: string,
  ) {}

  atEnd(): boolean {
    return this.tok.kind === 'eof';
  }
  private get tok(): Token {
    return this.toks[this.i]!;
  }
  private peek(k = 1): Token {
    return this.toks[Math.min(this.i + k, this.toks.length - 1)]!;
  }
  private fail(msg: string, t: Token = this.tok): never {
    throw new Asn1SyntaxError(msg, this.file, t.line, t.col, t.kind === 'eof' ? '<end of file>' : t.text);
  }
  private is(text: string, k = 0): boolean {
    const t = this.peek(k);
    return (t.kind === 'word' || t.kind === 'punct') && t.text === text;
  }
  private accept(text: string): boolean {
    if (this.is(text)) {
      this.i++;
      return true;
    }
    return false;
  }
  private expect(text: string): Token {
    if (!this.is(text)) this.fail(`expected '${text}'`);
    return this.toks[this.i++]!;
  }
  private word(what: string): string {
    if (this.tok.kind !== 'word') this.fail(`expected ${what}`);
    return this.toks[this.i++]!.text;
  }
  /** Skips a balanced `{...}` or `(...)` group starting at the current token. */
  private skipGroup(): void {
    const open = this.tok.text;
    const close = open === '{' ? '}' : open === '(' ? ')' : open === '[' ? ']' : this.fail('expected a bracket');
    let depth = 0;
    do {
      if (this.tok.kind === 'eof') this.fail(`unbalanced '${open}'`);
      if (this.tok.kind === 'punct' && this.tok.text === open) depth++;
      else if (this.tok.kind === 'punct' && this.tok.text === close) depth--;
      this.i++;
    } while (depth > 0);
  }

  module(): ModuleAst {
    const start = this.tok;
    const name = this.word('a module name');
    if (!isUpper(name)) this.fail('a module name starts with an upper-case letter', start);
    if (this.is('{')) this.skipGroup(); // module OID
    this.expect('DEFINITIONS');
    let tagging: ModuleAst['tagging'] = 'EXPLICIT';
    let extensibilityImplied = false;
    // EXPLICIT/IMPLICIT/AUTOMATIC TAGS, EXTENSIBILITY IMPLIED, encoding reference ("XER INSTRUCTIONS")
    while (!this.is('::=')) {
      if (this.is('EXPLICIT') || this.is('IMPLICIT') || this.is('AUTOMATIC')) {
        tagging = this.word('tagging') as ModuleAst['tagging'];
        this.expect('TAGS');
      } else if (this.accept('EXTENSIBILITY')) {
        this.expect('IMPLIED');
        extensibilityImplied = true;
      } else if (this.tok.kind === 'word' && this.is('INSTRUCTIONS', 1)) this.i += 2;
      else this.fail("expected 'TAGS', 'EXTENSIBILITY IMPLIED' or '::='");
    }
    this.expect('::=');
    this.expect('BEGIN');
    const mod: ModuleAst = {
      name,
      file: this.file,
      line: start.line,
      tagging,
      extensibilityImplied,
      imports: [],
      types: new Map(),
      values: new Map(),
      skipped: new Set(),
    };
    if (this.accept('EXPORTS')) {
      while (!this.accept(';')) {
        if (this.tok.kind === 'eof') this.fail("EXPORTS without closing ';'");
        this.i++;
      }
    }
    if (this.accept('IMPORTS')) this.imports(mod);
    while (!this.accept('END')) this.assignment(mod);
    if (this.tok.kind !== 'eof' && !(this.tok.kind === 'word' && this.is('DEFINITIONS', 1)) && !(this.tok.kind === 'word' && this.is('{', 1)))
      this.fail("text after 'END'");
    return mod;
  }

  /** IMPORTS a, b FROM ModA {oid} c FROM ModB ; — names may carry `{}` (parameterized). */
  private imports(mod: ModuleAst): void {
    let names: string[] = [];
    while (!this.accept(';')) {
      if (this.tok.kind === 'eof') this.fail("IMPORTS without closing ';'");
      if (this.accept('FROM')) {
        const t = this.tok;
        const from = this.word('a module name after FROM');
        mod.imports.push({ names, from, line: t.line });
        names = [];
        // Module OID, or an `AssignedIdentifier` value reference (lower-case word not followed by ',' or FROM).
        if (this.is('{')) this.skipGroup();
        else if (this.tok.kind === 'word' && isLower(this.tok.text) && !this.is(',', 1) && !this.is('FROM', 1) && !this.is('{', 1)) this.i++;
        continue;
      }
      names.push(this.word('an imported name'));
      if (this.is('{')) {
        this.i++;
        this.expect('}');
      }
      this.accept(',');
    }
    if (names.length) this.fail("imported names without 'FROM'");
  }

  private assignment(mod: ModuleAst): void {
    const t = this.tok;
    if (t.kind === 'eof') this.fail("module without 'END'");
    const name = this.word('an assignment');
    if (this.is('{')) {
      // Parameterized assignment: not supported, skipped whole (a reference to it fails to resolve).
      this.skipGroup();
      this.expect('::=');
      this.skipRhs();
      mod.skipped.add(name);
      return;
    }
    if (isUpper(name)) {
      if (this.is('::=')) {
        this.i++;
        if (SKIP_RHS.has(this.tok.text)) return (mod.skipped.add(name), this.skipRhs());
        const type = this.type();
        mod.types.set(name, { name, type, line: t.line });
        return;
      }
      // `OBJECT-SET-NAME CLASS-NAME ::= {...}` or `objectName CLASS ::= {...}`: information objects.
      if (this.tok.kind === 'word' && this.is('::=', 1)) {
        this.i += 2;
        mod.skipped.add(name);
        return this.skipRhs();
      }
      this.fail("expected '::='");
    }
    // value assignment: name Type ::= value
    const type = this.type();
    this.expect('::=');
    if (type.t === 'ref' && this.is('{') && !type.module && /^[A-Z][A-Z0-9-]*$/.test(type.name)) return (mod.skipped.add(name), this.skipRhs()); // an information object
    const value = this.value();
    mod.values.set(name, { name, type, value, line: t.line });
  }

  /** Skips the right side of an unsupported assignment: a `{...}` group or a word and its groups. */
  private skipRhs(): void {
    if (this.is('{')) this.skipGroup();
    else {
      this.i++;
      while (this.is('{') || this.is('(')) this.skipGroup();
      if (this.accept('WITH')) {
        this.expect('SYNTAX');
        this.skipGroup();
      }
    }
  }

  type(): TypeAst {
    const t = this.tok;
    let type: TypeAst;
    if (this.is('[')) {
      this.i++;
      let cls = 2;
      if (this.accept('UNIVERSAL')) cls = 0;
      else if (this.accept('APPLICATION')) cls = 1;
      else if (this.accept('PRIVATE')) cls = 3;
      const num = this.value();
      this.expect(']');
      let mode: 'IMPLICIT' | 'EXPLICIT' | undefined;
      if (this.accept('IMPLICIT')) mode = 'IMPLICIT';
      else if (this.accept('EXPLICIT')) mode = 'EXPLICIT';
      const inner = this.type();
      return { t: 'tagged', tag: { cls, num, mode }, inner, line: t.line };
    }
    if (t.kind !== 'word') this.fail('expected a type');
    const w = t.text;
    this.i++;
    if (w === 'SEQUENCE' || w === 'SET') {
      if (this.is('{')) {
        const { comps, ext } = this.components();
        type = { t: w === 'SEQUENCE' ? 'sequence' : 'set', comps, ext, line: t.line };
      } else {
        let constraint: ConstraintAst | undefined;
        if (this.is('SIZE')) constraint = { size: this.sizeOnly(), ext: false };
        else if (this.is('(')) constraint = this.constraint();
        this.expect('OF');
        // SEQUENCE OF name Type: the element may be named.
        if (this.tok.kind === 'word' && isLower(this.tok.text) && this.peek().kind !== 'eof' && (this.peek().kind === 'word' || this.is('[', 1))) this.i++;
        const elem = this.type();
        return { t: w === 'SEQUENCE' ? 'sequenceOf' : 'setOf', elem, constraint, line: t.line };
      }
    } else if (w === 'CHOICE') {
      const { comps, ext } = this.components();
      type = { t: 'choice', alts: comps, ext, line: t.line };
    } else if (w === 'ENUMERATED') {
      type = this.enumerated(t.line);
    } else if (w === 'INTEGER') {
      type = { t: 'builtin', name: 'INTEGER', named: this.is('{') ? this.namedNumbers() : undefined, line: t.line };
    } else if (w === 'BIT' || w === 'OCTET') {
      this.expect('STRING');
      const name = `${w} STRING`;
      type = { t: 'builtin', name, named: w === 'BIT' && this.is('{') ? this.namedNumbers() : undefined, line: t.line };
    } else if (w === 'OBJECT') {
      this.expect('IDENTIFIER');
      type = { t: 'builtin', name: 'OBJECT IDENTIFIER', line: t.line };
    } else if (w === 'CHARACTER') {
      this.expect('STRING');
      type = { t: 'builtin', name: 'UTF8String', line: t.line };
    } else if (w === 'ANY') {
      if (this.accept('DEFINED')) {
        this.expect('BY');
        this.word('an identifier');
      }
      type = { t: 'any', line: t.line };
    } else if (w === 'EXTERNAL' || w === 'EMBEDDED') {
      if (w === 'EMBEDDED') this.expect('PDV');
      type = { t: 'any', line: t.line };
    } else if (SIMPLE_TYPES.has(w)) {
      type = { t: 'builtin', name: w, line: t.line };
    } else if (isUpper(w)) {
      if (this.is('.') && this.peek().kind === 'word') {
        this.i++;
        const name = this.word('a type name');
        type = { t: 'ref', name, module: w, line: t.line };
      } else if (this.is('.') && this.is('&', 1)) {
        // CLASS.&field: an open type, decoded as raw bytes.
        this.i += 2;
        this.word('a field name');
        type = { t: 'any', line: t.line };
      } else type = { t: 'ref', name: w, line: t.line };
      if (this.is('{')) this.skipGroup(); // actual parameters: not supported, treated as the plain reference
    } else this.fail('expected a type');
    while (this.is('(')) {
      const c = this.constraint();
      type.constraint = type.constraint ? mergeSerial(type.constraint, c) : c;
    }
    return type;
  }

  private enumerated(line: number): TypeAst {
    this.expect('{');
    const root: { name: string; value?: ValueAst }[] = [];
    let ext: { name: string; value?: ValueAst }[] | undefined;
    let target = root;
    while (!this.accept('}')) {
      if (this.accept('...')) {
        ext = [];
        target = ext;
        if (this.accept('!')) this.value();
      } else {
        const name = this.word('an enumeration item');
        let value: ValueAst | undefined;
        if (this.accept('(')) {
          value = this.value();
          this.expect(')');
        }
        target.push({ name, value });
      }
      if (!this.accept(',') && !this.is('}')) this.fail("expected ',' or '}'");
    }
    return { t: 'enum', root, ext, line };
  }

  private namedNumbers(): NamedNumber[] {
    this.expect('{');
    const out: NamedNumber[] = [];
    while (!this.accept('}')) {
      const name = this.word('a named number');
      this.expect('(');
      out.push({ name, value: this.value() });
      this.expect(')');
      if (!this.accept(',') && !this.is('}')) this.fail("expected ',' or '}'");
    }
    return out;
  }

  /** `{ a T, b T OPTIONAL, ..., [[ c T ]], d T }` for SEQUENCE, SET and CHOICE. */
  private components(): { comps: ComponentAst[]; ext: boolean } {
    this.expect('{');
    const comps: ComponentAst[] = [];
    let markers = 0;
    const inExt = () => markers === 1;
    while (!this.accept('}')) {
      if (this.accept('...')) {
        markers++;
        if (this.accept('!')) this.value();
      } else if (this.accept('[[')) {
        const group = ++this.extGroup;
        if (this.tok.kind === 'number' && this.is(':', 1)) this.i += 2; // version number
        while (!this.accept(']]')) {
          comps.push({ ...this.component(), extGroup: group, extBracket: true });
          if (!this.accept(',') && !this.is(']]')) this.fail("expected ',' or ']]'");
        }
      } else {
        const c = this.component();
        if (inExt()) c.extGroup = ++this.extGroup;
        comps.push(c);
      }
      if (!this.accept(',') && !this.is('}')) this.fail("expected ',' or '}'");
    }
    return { comps, ext: markers > 0 };
  }

  private component(): ComponentAst {
    if (this.accept('COMPONENTS')) {
      this.expect('OF');
      return { name: '', type: this.type(), optional: false, componentsOf: true };
    }
    const t = this.tok;
    const name = this.word('a component name');
    if (!isLower(name)) this.fail('a component name starts with a lower-case letter', t);
    const type = this.type();
    if (this.accept('OPTIONAL')) return { name, type, optional: true };
    if (this.accept('DEFAULT')) return { name, type, optional: true, default: this.value() };
    return { name, type, optional: false };
  }

  value(): ValueAst {
    const t = this.tok;
    if (this.accept('-')) {
      const n = this.tok;
      if (n.kind === 'number') return (this.i++, { v: 'number', n: -BigInt(n.text) });
      if (n.kind === 'real') return (this.i++, { v: 'real', n: -Number(n.text) });
      this.fail('expected a number after -');
    }
    switch (t.kind) {
      case 'number':
        this.i++;
        return { v: 'number', n: BigInt(t.text) };
      case 'real':
        this.i++;
        return { v: 'real', n: Number(t.text) };
      case 'cstring':
        this.i++;
        return { v: 'cstring', s: t.text };
      case 'hstring':
        this.i++;
        return { v: 'hstring', s: t.text };
      case 'bstring':
        this.i++;
        return { v: 'bstring', s: t.text };
      case 'word':
        this.i++;
        if (t.text === 'TRUE' || t.text === 'FALSE') return { v: 'bool', b: t.text === 'TRUE' };
        if (t.text === 'NULL') return { v: 'null' };
        if (t.text === 'PLUS-INFINITY') return { v: 'real', n: Infinity };
        if (t.text === 'MINUS-INFINITY') return { v: 'real', n: -Infinity };
        if (this.is('.') && this.peek().kind === 'word') {
          this.i++;
          return { v: 'ref', module: t.text, name: this.word('a value name') };
        }
        return { v: 'ref', name: t.text };
      case 'punct':
        if (t.text === '{') return this.listValue();
    }
    this.fail('expected a value');
  }

  /** `{ iso(1) member-body(2) 840 }` or `{ a, b }` (named bits) or `{ 1 2 3 }`. */
  private listValue(): ValueAst {
    this.expect('{');
    const items: ValueAst[] = [];
    const named: (string | undefined)[] = [];
    while (!this.accept('}')) {
      if (this.accept(',')) continue;
      if (this.tok.kind === 'word' && this.is('(', 1)) {
        const name = this.word('a name');
        this.i++;
        items.push(this.value());
        named.push(name);
        this.expect(')');
      } else if (this.is('{')) {
        items.push(this.listValue());
        named.push(undefined);
      } else {
        items.push(this.value());
        named.push(undefined);
      }
    }
    return { v: 'list', items, named };
  }

  /** `SIZE (...)` where it stands without parentheses (SEQUENCE SIZE (1..n) OF). */
  private sizeOnly(): ConstraintAst {
    this.expect('SIZE');
    return this.constraint();
  }

  /** One parenthesized constraint: `(root [, ...] [, additions])`. */
  constraint(): ConstraintAst {
    this.expect('(');
    const c = this.elementSet();
    if (this.accept(',')) {
      this.expect('...');
      c.ext = true;
      if (this.accept(',')) this.elementSet(); // additions are not PER-visible for the root
    } else if (this.accept('!')) {
      this.value();
    }
    if (this.accept('!')) this.value();
    this.expect(')');
    return c;
  }

  /** Unions of elements (the hull of their ranges); an intersection keeps the tighter PER-visible part. */
  private elementSet(): ConstraintAst {
    let acc: ConstraintAst = { ext: false };
    let first = true;
    let op: 'union' | 'inter' = 'union';
    for (;;) {
      if (this.is('...')) break;
      const e = this.element();
      acc = first ? e : op === 'union' ? unionOf(acc, e) : mergeSerial(acc, e);
      first = false;
      if (this.accept('|') || this.accept('UNION')) op = 'union';
      else if (this.accept('^') || this.accept('INTERSECTION')) op = 'inter';
      else if (this.accept('EXCEPT')) this.element();
      else break;
    }
    return acc;
  }

  private element(): ConstraintAst {
    if (this.accept('SIZE')) return { size: this.constraint(), ext: false };
    if (this.accept('FROM')) {
      const inner = this.constraint();
      return { from: inner.value, ext: false };
    }
    if (this.is('(')) return this.constraint();
    if (this.accept('ALL')) {
      this.expect('EXCEPT');
      this.element();
      return { ext: false };
    }
    if (this.is('WITH')) {
      this.i++;
      this.word('COMPONENT(S)');
      if (this.is('(') || this.is('{')) this.skipGroup();
      return { ext: false };
    }
    if (this.accept('CONTAINING')) {
      this.type();
      if (this.accept('ENCODED')) {
        this.expect('BY');
        this.value();
      }
      return { ext: false };
    }
    if (this.accept('ENCODED')) {
      this.expect('BY');
      this.value();
      return { ext: false };
    }
    if (this.accept('PATTERN')) {
      this.value();
      return { ext: false };
    }
    if (this.is('{')) {
      // A table constraint `{ObjectSet}{@field}` or a value list: not PER-visible.
      this.skipGroup();
      while (this.is('{')) this.skipGroup();
      return { ext: false };
    }
    const lo: Bound = this.accept('MIN') ? 'MIN' : this.value();
    this.accept('<');
    if (this.accept('..')) {
      this.accept('<');
      const hi: Bound = this.accept('MAX') ? 'MAX' : this.value();
      return { value: [{ lo, hi }], ext: false };
    }
    return { value: [{ lo, hi: lo }], ext: false };
  }
}

function unionOf(a: ConstraintAst, b: ConstraintAst): ConstraintAst {
  return {
    value: a.value && b.value ? [...a.value, ...b.value] : undefined,
    size: a.size && b.size ? unionOf(a.size, b.size) : undefined,
    from: a.from && b.from ? [...a.from, ...b.from] : undefined,
    ext: a.ext || b.ext,
  };
}

/** Serial constraints `(A)(B)`: each PER-visible part from whichever sets it (the later one wins). */
function mergeSerial(a: ConstraintAst, b: ConstraintAst): ConstraintAst {
  return { value: b.value ?? a.value, size: b.size ?? a.size, from: b.from ?? a.from, ext: b.value || b.size ? b.ext : a.ext };
}

/** Parses every module in one file's text. Throws Asn1SyntaxError naming file, line and token. */
export function parseModules(text: string, file: string): ModuleAst[] {
  const toks = tokenize(text, file);
  const p = new Parser(toks, file);
  const mods: ModuleAst[] = [];
  while (!p.atEnd()) mods.push(p.module());
  if (mods.length === 0) throw new Asn1SyntaxError('no ASN.1 module in file', file, 1, 1, '');
  return mods;
}
