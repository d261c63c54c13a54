// Compiles parsed modules into the type model: resolves type and value references (IMPORTS across
// the files of a directory), applies the module's tagging default (EXPLICIT / IMPLICIT / AUTOMATIC),
// inlines COMPONENTS OF, and reduces constraints to PER-visible bounds.
import type { Bound, ComponentAst, ConstraintAst, ModuleAst, RangeAst, TypeAst, ValueAst } from './ast.js';
import { UNIVERSAL, tagKey, type Asn1Type, type Body, type Component, type EnumItem, type Kind, type Range } from './model.js';

export class Asn1SchemaError extends Error {
  override name = 'Asn1SchemaError';
}

const KIND_OF: Record<string, Kind> = {
  INTEGER: 'integer',
  BOOLEAN: 'boolean',
  NULL: 'null',
  REAL: 'real',
  'OCTET STRING': 'octets',
  'BIT STRING': 'bits',
  'OBJECT IDENTIFIER': 'oid',
  'RELATIVE-OID': 'relOid',
  GeneralizedTime: 'gtime',
  UTCTime: 'utime',
};

interface Ctx {
  mod: ModuleAst;
}

export class Schema {
  private readonly modules = new Map<string, ModuleAst>();
  private readonly bodies = new Map<string, Asn1Type>();
  private readonly building = new Set<string>();

  constructor(mods: ModuleAst[]) {
    for (const m of mods) {
      const prev = this.modules.get(m.name);
      if (prev) throw new Asn1SchemaError(`${m.file}:${m.line}: module '${m.name}' is defined twice (also in ${prev.file}:${prev.line})`);
      this.modules.set(m.name, m);
    }
    for (const m of mods) {
      for (const imp of m.imports) {
        const from = this.modules.get(imp.from);
        if (!from)
          throw new Asn1SchemaError(
            `${m.file}:${imp.line}: module '${m.name}' imports from module '${imp.from}', which is not in the schema files (known modules: ${[...this.modules.keys()].join(', ')})`,
          );
        for (const n of imp.names) {
          if (!from.types.has(n) && !from.values.has(n) && !from.skipped.has(n) && !this.importedInto(from, n)) {
            throw new Asn1SchemaError(`${m.file}:${imp.line}: '${n}' is imported from '${imp.from}', which does not define it`);
          }
        }
      }
    }
  }

  private importedInto(mod: ModuleAst, name: string): boolean {
    return mod.imports.some((i) => i.names.includes(name));
  }

  /** Every type assignment name, qualified as Module.Type. */
  typeNames(): string[] {
    return [...this.modules.values()].flatMap((m) => [...m.types.keys()].map((t) => `${m.name}.${t}`));
  }

  /** A type by `Type` or `Module.Type`; throws naming the known types when there is none. */
  type(name: string): Asn1Type {
    const dot = name.lastIndexOf('.');
    let mod: ModuleAst | undefined;
    let tname = name;
    if (dot > 0) {
      mod = this.modules.get(name.slice(0, dot));
      tname = name.slice(dot + 1);
    } else {
      const found = [...this.modules.values()].filter((m) => m.types.has(name));
      if (found.length > 1)
        throw new Asn1SchemaError(`type '${name}' is defined in several modules (${found.map((m) => m.name).join(', ')}): name it as Module.${name}`);
      mod = found[0];
    }
    if (!mod || !mod.types.has(tname)) {
      throw new Asn1SchemaError(
        `unknown message class '${name}'; known types: ${this.typeNames()
          .map((n) => n.slice(n.indexOf('.') + 1))
          .join(', ')}`,
      );
    }
    const t = this.assigned(mod, tname, mod.types.get(tname)!.line);
    this.forceAll(t, new Set());
    return t;
  }

  /** Resolves every reference reachable from `t`, so that schema mistakes surface at compile time. */
  private forceAll(t: Asn1Type, seen: Set<Body>): void {
    if (seen.has(t.body)) return;
    seen.add(t.body);
    for (const c of t.body.components ?? []) this.forceAll(c.type, seen);
    if (t.body.element) this.forceAll(t.body.element, seen);
  }

  /** Where a name visible in `mod` is defined: the module itself or the module it imports it from. */
  private lookup(mod: ModuleAst, name: string, kind: 'types' | 'values', line: number, explicitModule?: string): ModuleAst {
    if (explicitModule) {
      const m = this.modules.get(explicitModule);
      if (!m) throw new Asn1SchemaError(`${mod.file}:${line}: module '${explicitModule}' is not in the schema files`);
      return this.lookup(m, name, kind, line);
    }
    if (mod[kind].has(name)) return mod;
    const imp = mod.imports.find((i) => i.names.includes(name));
    if (imp) return this.lookup(this.modules.get(imp.from)!, name, kind, line);
    throw new Asn1SchemaError(
      `${mod.file}:${line}: ${kind === 'types' ? 'type' : 'value'} '${name}' is not defined in module '${mod.name}' nor imported into it`,
    );
  }

  private assigned(mod: ModuleAst, name: string, line: number, explicitModule?: string): Asn1Type {
    const home = this.lookup(mod, name, 'types', line, explicitModule);
    const key = `${home.name}.${name}`;
    const done = this.bodies.get(key);
    if (done) return done;
    const ast = home.types.get(name)!;
    if (this.building.has(key)) {
      // A type defined through itself with no constructed type in between (A ::= B, B ::= A).
      throw new Asn1SchemaError(`${home.file}:${ast.line}: type '${name}' is defined in terms of itself`);
    }
    // Placeholder first: a constructed type may refer to itself through its components.
    const body: Body = { kind: 'any', name, module: home.name };
    const use: Asn1Type = { tags: [], body, refName: name };
    this.building.add(key);
    const tags = this.tagsOf(ast.type, { mod: home });
    use.tags = tags;
    this.bodies.set(key, use);
    this.building.delete(key);
    const built = this.build(ast.type, { mod: home });
    Object.assign(body, built.body, { name: body.name, module: body.module });
    // An assignment of a plain reference (A ::= B) shares B's body object: keep constraints of the use.
    if (built.range) use.range = built.range;
    if (built.size) use.size = built.size;
    if (built.alphabet) use.alphabet = built.alphabet;
    return use;
  }

  /** Tags of a type without building its components (safe for recursive types). */
  private tagsOf(t: TypeAst, ctx: Ctx): number[] {
    switch (t.t) {
      case 'tagged': {
        const k = tagKey(t.tag.cls, this.int(t.tag.num, ctx, t.line));
        const inner = this.tagsOf(t.inner, ctx);
        return this.isExplicit(t, inner, ctx) ? [k, ...inner] : [k, ...inner.slice(1)];
      }
      case 'ref': {
        const home = this.lookup(ctx.mod, t.name, 'types', t.line, t.module);
        const key = `${home.name}.${t.name}`;
        const known = this.bodies.get(key);
        if (known) return known.tags;
        if (this.building.has(key)) throw new Asn1SchemaError(`${home.file}:${t.line}: type '${t.name}' is defined in terms of itself`);
        this.building.add(key);
        try {
          return this.tagsOf(home.types.get(t.name)!.type, { mod: home });
        } finally {
          this.building.delete(key);
        }
      }
      case 'choice':
      case 'any':
        return [];
      case 'sequence':
      case 'sequenceOf':
        return [tagKey(0, 16)];
      case 'set':
      case 'setOf':
        return [tagKey(0, 17)];
      case 'enum':
        return [tagKey(0, 10)];
      case 'builtin':
        return [tagKey(0, UNIVERSAL[t.name]!)];
    }
  }

  private isExplicit(t: TypeAst & { t: 'tagged' }, innerTags: number[], ctx: Ctx): boolean {
    if (innerTags.length === 0) return true; // untagged CHOICE / open type: a tag on it is always explicit
    const mode = t.tag.mode ?? (ctx.mod.tagging === 'EXPLICIT' ? 'EXPLICIT' : 'IMPLICIT');
    return mode === 'EXPLICIT';
  }

  private build(t: TypeAst, ctx: Ctx): Asn1Type {
    let out: Asn1Type;
    switch (t.t) {
      case 'tagged': {
        const inner = this.build(t.inner, ctx);
        const k = tagKey(t.tag.cls, this.int(t.tag.num, ctx, t.line));
        out = { ...inner, tags: this.isExplicit(t, inner.tags, ctx) ? [k, ...inner.tags] : [k, ...inner.tags.slice(1)] };
        break;
      }
      case 'ref': {
        const target = this.assigned(ctx.mod, t.name, t.line, t.module);
        out = { ...target };
        break;
      }
      case 'any':
        out = { tags: [], body: { kind: 'any' } };
        break;
      case 'builtin': {
        const body: Body = { kind: KIND_OF[t.name] ?? 'string' };
        if (body.kind === 'string') body.stringType = t.name;
        if (t.named) body.named = new Map(t.named.map((n) => [Number(this.int(n.value, ctx, t.line)), n.name]));
        out = { tags: [tagKey(0, UNIVERSAL[t.name]!)], body };
        break;
      }
      case 'enum': {
        const root = this.enumItems(t.root, ctx, t.line, new Set());
        const used = new Set(root.map((i) => i.value));
        const ext = t.ext ? this.enumItems(t.ext, ctx, t.line, used, Math.max(-1, ...root.map((i) => i.value)) + 1) : undefined;
        root.sort((a, b) => a.value - b.value);
        out = { tags: [tagKey(0, 10)], body: { kind: 'enumerated', enumRoot: root, enumExt: ext, ext: t.ext !== undefined || ctx.mod.extensibilityImplied } };
        break;
      }
      case 'sequenceOf':
      case 'setOf':
        out = { tags: [tagKey(0, t.t === 'sequenceOf' ? 16 : 17)], body: { kind: t.t, element: this.build(t.elem, ctx) } };
        break;
      case 'sequence':
      case 'set':
      case 'choice': {
        const comps = this.components(t.t === 'choice' ? t.alts : t.comps, ctx, t.t === 'choice');
        const kind: Kind = t.t;
        out = {
          tags: kind === 'choice' ? [] : [tagKey(0, kind === 'sequence' ? 16 : 17)],
          body: { kind, components: comps, ext: t.ext || ctx.mod.extensibilityImplied },
        };
        break;
      }
    }
    if (t.constraint) this.applyConstraint(out, t.constraint, ctx, t.line);
    return out;
  }

  private enumItems(items: { name: string; value?: ValueAst }[], ctx: Ctx, line: number, used: Set<number>, nextExt?: number): EnumItem[] {
    const out: EnumItem[] = [];
    for (const it of items) if (it.value) used.add(Number(this.int(it.value, ctx, line)));
    let next = nextExt ?? 0;
    for (const it of items) {
      let value: number;
      if (it.value) value = Number(this.int(it.value, ctx, line));
      else {
        while (used.has(next)) next++;
        value = next;
        used.add(value);
      }
      if (nextExt !== undefined) next = value + 1;
      out.push({ name: it.name, value });
    }
    return out;
  }

  private components(list: ComponentAst[], ctx: Ctx, isChoice: boolean): Component[] {
    // Automatic tagging is decided on the components as written, before COMPONENTS OF is expanded.
    const auto = ctx.mod.tagging === 'AUTOMATIC' && !list.some((c) => !c.componentsOf && c.type.t === 'tagged');
    const expanded: ComponentAst[] = [];
    for (const c of list) {
      if (!c.componentsOf) {
        expanded.push(c);
        continue;
      }
      const ref = c.type;
      if (ref.t !== 'ref') throw new Asn1SchemaError(`${ctx.mod.file}:${ref.line}: COMPONENTS OF needs a type reference`);
      const home = this.lookup(ctx.mod, ref.name, 'types', ref.line, ref.module);
      const target = home.types.get(ref.name)!.type;
      if (target.t !== 'sequence' && target.t !== 'set')
        throw new Asn1SchemaError(`${ctx.mod.file}:${ref.line}: COMPONENTS OF '${ref.name}' is not a SEQUENCE or SET`);
      expanded.push(...target.comps.filter((x) => x.extGroup === undefined && !x.componentsOf));
    }
    return expanded.map((c, i) => {
      const type: TypeAst = auto ? { t: 'tagged', tag: { cls: 2, num: { v: 'number', n: BigInt(i) } }, inner: c.type, line: c.type.line } : c.type;
      const compiled = this.build(type, ctx);
      const out: Component = {
        name: c.name,
        type: compiled,
        optional: c.optional && !isChoice,
        hasDefault: c.default !== undefined,
        extGroup: c.extGroup,
        extBracket: c.extBracket,
      };
      if (c.default) out.default = this.defaultValue(c.default, compiled, ctx, c.type.line);
      return out;
    });
  }

  /** A DEFAULT value in the decoded mapping (what a decoder returns for the absent component). */
  private defaultValue(v: ValueAst, t: Asn1Type, ctx: Ctx, line: number): unknown {
    const b = t.body;
    if (v.v === 'ref' && b.kind === 'enumerated') return v.name;
    if (v.v === 'ref' && b.kind === 'integer' && b.named && [...b.named.values()].includes(v.name)) {
      for (const [n, name] of b.named) if (name === v.name) return n;
    }
    const r = v.v === 'ref' ? this.value(v, ctx, line) : v;
    switch (r.v) {
      case 'number': {
        if (b.kind === 'real') return Number(r.n);
        return Number.isSafeInteger(Number(r.n)) ? Number(r.n) : r.n.toString();
      }
      case 'real':
        return r.n;
      case 'bool':
        return r.b;
      case 'null':
        return null;
      case 'cstring':
        return r.s;
      case 'hstring':
        return b.kind === 'bits' ? [...r.s].map((h) => parseInt(h, 16).toString(2).padStart(4, '0')).join('') : r.s.toLowerCase();
      case 'bstring':
        if (b.kind === 'octets')
          return BigInt('0b' + (r.s || '0'))
            .toString(16)
            .padStart(Math.ceil(r.s.length / 8) * 2, '0');
        return b.named ? namedBitsOf(r.s, b.named) : r.s;
      case 'list':
        if (b.kind === 'bits') return r.items.map((x) => (x.v === 'ref' ? x.name : ''));
        return undefined;
      default:
        return undefined;
    }
  }

  private value(v: ValueAst, ctx: Ctx, line: number, depth = 0): ValueAst {
    if (v.v !== 'ref') return v;
    if (depth > 20) throw new Asn1SchemaError(`${ctx.mod.file}:${line}: value '${v.name}' is defined in terms of itself`);
    const home = this.lookup(ctx.mod, v.name, 'values', line, v.module);
    return this.value(home.values.get(v.name)!.value, { mod: home }, line, depth + 1);
  }

  private int(v: ValueAst, ctx: Ctx, line: number): number {
    return Number(this.bigint(v, ctx, line));
  }

  private bigint(v: ValueAst, ctx: Ctx, line: number): bigint {
    const r = this.value(v, ctx, line);
    if (r.v === 'number') return r.n;
    throw new Asn1SchemaError(`${ctx.mod.file}:${line}: expected an integer value`);
  }

  private bound(b: Bound, ctx: Ctx, line: number): bigint | undefined {
    if (b === 'MIN' || b === 'MAX') return undefined;
    const r = this.value(b, ctx, line);
    if (r.v === 'number') return r.n;
    return undefined; // a range of strings (FROM "a".."z") is handled by alphabetOf
  }

  private hull(ranges: RangeAst[], ctx: Ctx, line: number, ext: boolean): Range<bigint> {
    let lo: bigint | undefined;
    let hi: bigint | undefined;
    let openLo = false;
    let openHi = false;
    for (const r of ranges) {
      const l = this.bound(r.lo, ctx, line);
      const h = this.bound(r.hi, ctx, line);
      if (l === undefined) openLo = true;
      else if (lo === undefined || l < lo) lo = l;
      if (h === undefined) openHi = true;
      else if (hi === undefined || h > hi) hi = h;
    }
    return { lo: openLo ? undefined : lo, hi: openHi ? undefined : hi, ext };
  }

  private applyConstraint(t: Asn1Type, c: ConstraintAst, ctx: Ctx, line: number): void {
    const k = t.body.kind;
    if (c.value && (k === 'integer' || k === 'real' || k === 'enumerated')) {
      if (k === 'integer') t.range = this.hull(c.value, ctx, line, c.ext);
    }
    // A single-value constraint on a string type (SIZE-like for fixed strings) is not PER-visible.
    if (c.size) {
      const s = c.size.value ? this.hull(c.size.value, ctx, line, c.size.ext) : undefined;
      if (s) t.size = { lo: s.lo === undefined ? undefined : Number(s.lo), hi: s.hi === undefined ? undefined : Number(s.hi), ext: s.ext || c.ext };
    }
    if (c.from && k === 'string') {
      const set = new Set<number>();
      for (const r of c.from) {
        const lo = this.value(r.lo as ValueAst, ctx, line);
        const hi = this.value(r.hi as ValueAst, ctx, line);
        if (lo.v === 'cstring' && hi.v === 'cstring') {
          if (lo.s === hi.s) for (const ch of lo.s) set.add(ch.codePointAt(0)!);
          else for (let x = lo.s.codePointAt(0)!; x <= hi.s.codePointAt(0)!; x++) set.add(x);
        }
      }
      t.alphabet = [...set].sort((a, b) => a - b);
    }
  }
}

/** Bits '0101' of a BIT STRING with named bits: the names of the bits that are set. */
export function namedBitsOf(bits: string, named: Map<number, string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < bits.length; i++) if (bits[i] === '1') out.push(named.get(i) ?? `bit${i}`);
  return out;
}
