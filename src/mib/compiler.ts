// MIB compiler: a set of source files in any order -> compiled modules (numeric OIDs, base types,
// table structure, notification members) plus a list of failures with their reasons.
//
// Imports are resolved by name against the set, not by loading order, so input order does not
// matter and import cycles are harmless. A module fails (mode `full`) when it has a syntax error, an
// unresolvable definition, or imports a module that is missing or failed; the failure names those
// modules. Every other module still compiles. Mode `partial` keeps what resolves in any module.
//
// Limits (MibLimits: source size, definitions, OID depth, compiled size) fail the module that
// breaches them in either mode, so that no input makes the work or the output grow beyond them.
import { MACROS, MAX_NESTING, parseMib, type Definition, type OidComponent, type ParsedModule } from './parser.js';
import {
  MIB_FORMAT,
  MIB_LIMITS,
  MIB_LIMIT_SETTINGS,
  MIB_MAX_DIAGNOSTICS,
  type MibLimits,
  type BaseType,
  type CompileResult,
  type CompiledModule,
  type CompiledNode,
  type CompiledSyntax,
  type CompiledType,
  type MibDiagnostic,
  type ModuleFailure,
  type NodeKind,
  type ShadowedModule,
  type SymbolRef,
  type TypeAst,
} from './types.js';

export interface MibSource {
  /** a name for diagnostics (the path as the caller knows it) */
  file: string;
  text: string;
  /** source group; decides which of two sources of one module wins (see preferSource) */
  group?: string;
}

export interface CompileOptions {
  /** `full` (default): a module with any error fails. `partial`: keep the definitions that resolve. */
  mode?: 'full' | 'partial';
  /** Rank of a source group; the higher rank wins a module name. Default: groupRank below. */
  groupRank?: (group: string | undefined) => number;
  /** Default MIB_LIMITS. */
  limits?: Partial<MibLimits>;
  /**
   * Told the file whose source is in work (parsed, built, made JSON), and undefined while the work
   * is across modules: the store's watch for sources that stop the process (src/mib/store.ts).
   */
  onSource?: (file: string | undefined) => void;
}

/** Default rank: uploaded groups (1) beat bundled ones (0; group names starting with `bundled`). */
export const groupRank = (group: string | undefined): number => (group?.startsWith('bundled') ? 0 : 1);

/**
 * The shadowing rule: of two sources of the same module, the higher group rank wins; within a rank
 * the newer LAST-UPDATED wins; on a tie the source given first wins (stable).
 * Returns true when `a` beats `b`.
 */
export function preferSource(a: { group?: string; lastUpdated?: string }, b: { group?: string; lastUpdated?: string }, rank = groupRank): boolean {
  const ra = rank(a.group);
  const rb = rank(b.group);
  if (ra !== rb) return ra > rb;
  return smiDate(a.lastUpdated) > smiDate(b.lastUpdated);
}

/** LAST-UPDATED `YYMMDDHHMMZ` or `YYYYMMDDHHMMZ` -> `YYYYMMDDHHMM` (comparable as text); '' if absent. */
export function smiDate(s: string | undefined): string {
  if (!s) return '';
  const d = s.replace(/[^0-9]/g, '');
  return d.length === 10 ? '19' + d : d;
}

const ROOTS: Record<string, string> = { ccitt: '0', iso: '1', 'joint-iso-ccitt': '2' };

/** SMI application types by name, for a type whose definition is tagged, a CHOICE, or absent. */
const SMI_BASE: Record<string, BaseType> = {
  Integer32: 'Integer32',
  Unsigned32: 'Unsigned32',
  Gauge32: 'Gauge32',
  Gauge: 'Gauge32',
  Counter32: 'Counter32',
  Counter: 'Counter32',
  Counter64: 'Counter64',
  TimeTicks: 'TimeTicks',
  IpAddress: 'IpAddress',
  NetworkAddress: 'IpAddress',
  Opaque: 'Opaque',
};
const TAG_BASE: BaseType[] = ['IpAddress', 'Counter32', 'Gauge32', 'TimeTicks', 'Opaque', 'unknown', 'Counter64'];

const OID_KINDS = new Set([
  'oid',
  'object-type',
  'module-identity',
  'object-identity',
  'notification-type',
  'trap-type',
  'object-group',
  'notification-group',
  'module-compliance',
  'agent-capabilities',
]);

interface Ctx {
  p: ParsedModule;
  group?: string;
  defs: Map<string, Definition>;
  /** symbol -> module it is imported from */
  imports: Map<string, string>;
  /** names given inside OID values (`org(3)`) -> OID */
  implicit: Map<string, string>;
  errors: MibDiagnostic[];
  warnings: MibDiagnostic[];
  missing: Set<string>;
  failedImports: Set<string>;
  failed: boolean;
  /** errors and warnings left out after MIB_MAX_DIAGNOSTICS each */
  droppedErrors: number;
  droppedWarnings: number;
}

interface Structure {
  tables: Set<string>;
  rows: Set<string>;
  /** rows, and tables that carry INDEX themselves */
  columnParents: Set<string>;
}

interface Resolved {
  ctx: Ctx;
  def: Definition;
}

/** Parses and compiles a set of MIB sources. Never throws on bad input. */
export function compileMibs(sources: MibSource[], opts: CompileOptions = {}): CompileResult {
  const limits: MibLimits = { ...MIB_LIMITS, ...opts.limits };
  const parsed: { p: ParsedModule; group?: string }[] = [];
  const failed: ModuleFailure[] = [];
  for (const s of sources) {
    // UTF-8 takes at most 3 bytes per UTF-16 unit: most texts need no count.
    const bytes = s.text.length * 3 <= limits.maxSourceBytes ? 0 : Buffer.byteLength(s.text);
    if (bytes > limits.maxSourceBytes) {
      failed.push(sourceLimitFailure(s, bytes, s.text.slice(0, 4096), limits.maxSourceBytes));
      continue;
    }
    opts.onSource?.(s.file);
    const r = parseMib(s.text, s.file, { maxSymbols: limits.maxSymbols });
    for (const p of r.modules) parsed.push({ p, group: s.group });
    if (r.errors.length && !r.modules.length)
      failed.push({ module: null, file: s.file, ...(s.group !== undefined ? { group: s.group } : {}), missing: [], failedImports: [], errors: r.errors });
    else if (r.errors.length) r.modules[0]!.errors.push(...r.errors);
  }
  opts.onSource?.(undefined);
  try {
    return new Compiler(opts, limits).run(parsed, failed);
  } finally {
    opts.onSource?.(undefined);
  }
}

/** A source of `bytes`, over the limit `max`, as the failure of its module (named from the header in `head`), unparsed. */
export function sourceLimitFailure(s: { file: string; group?: string }, bytes: number, head: string, max: number): ModuleFailure {
  const setting = MIB_LIMIT_SETTINGS.maxSourceBytes;
  const module = /([A-Za-z][A-Za-z0-9-]*)\s+(?:\{[^}]{0,1024}\}\s*)?DEFINITIONS\b/.exec(head)?.[1] ?? null;
  const message = `${s.file} is ${bytes} bytes; a MIB source may have at most ${max} (${setting}): split it, or raise ${setting}`;
  return {
    module,
    file: s.file,
    ...(s.group !== undefined ? { group: s.group } : {}),
    missing: [],
    failedImports: [],
    errors: [{ severity: 'error', file: s.file, line: 0, column: 0, ...(module ? { module } : {}), message, limit: setting }],
    limit: setting,
  };
}

/**
 * JSON.stringify(value) of a plain object, or undefined as soon as it grows past `max` characters:
 * the arrays at its top (a module's nodes) go element by element, so a module whose JSON would be
 * huge (an OID or a shared enumeration repeated in each node) is stopped within one node of the limit.
 */
export function jsonWithin(value: object, max: number): string | undefined {
  const parts: string[] = [];
  let size = 2;
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined || typeof v === 'function') continue; // (JSON.stringify leaves these keys out)
    const key = (parts.length ? ',' : '') + JSON.stringify(k) + ':';
    parts.push(key);
    size += key.length;
    if (Array.isArray(v)) {
      parts.push('[');
      for (let i = 0; i < v.length; i++) {
        const item = (i ? ',' : '') + (JSON.stringify(v[i]) ?? 'null');
        size += item.length;
        if (size > max) return undefined;
        parts.push(item);
      }
      parts.push(']');
      size += 2;
    } else {
      const text = JSON.stringify(v);
      size += text.length;
      parts.push(text);
    }
    if (size > max) return undefined;
  }
  return '{' + parts.join('') + '}';
}

/** SMI descriptors have at most 64 characters (RFC 2578 3.1). */
const MODULE_NAME_MAX = 64;

class Compiler {
  private readonly ctxs = new Map<string, Ctx>();
  private readonly oidMemo = new Map<Definition, string | null>();
  private readonly typeMemo = new Map<Definition, CompiledSyntax | null>();
  private globalNames?: Map<string, Resolved[]>;
  private readonly mode: 'full' | 'partial';
  private readonly rank: (g: string | undefined) => number;
  /** definitions open in defOid (and in namedSyntax): the recursion is bounded by the OID depth limit (and MAX_NESTING) */
  private oidDepth = 0;
  private typeDepth = 0;
  /** set while a resolution that went too deep unwinds: nothing on its way is memoised or reported */
  private tooDeep = false;

  constructor(
    private readonly opts: CompileOptions,
    private readonly limits: MibLimits,
  ) {
    this.mode = opts.mode ?? 'full';
    this.rank = opts.groupRank ?? groupRank;
  }

  run(parsed: { p: ParsedModule; group?: string }[], failed: ModuleFailure[]): CompileResult {
    const shadowed = this.pickSources(parsed);
    const full = this.mode === 'full';
    for (const c of this.ctxs.values()) {
      // Fails in either mode: such a name cannot be an SMI module (and would not fit a file name).
      if (c.p.name.length > MODULE_NAME_MAX) {
        c.errors.push({
          severity: 'error',
          file: c.p.file,
          line: c.p.line,
          column: c.p.column,
          token: c.p.name,
          module: c.p.name,
          message: `module name is ${c.p.name.length} characters long; SMI names have at most ${MODULE_NAME_MAX} (RFC 2578)`,
        });
        c.failed = true;
      }
      // A breached limit fails the module in either mode too (the parser stopped at the limit).
      if (c.p.errors.some((e) => e.limit)) c.failed = true;
    }

    for (const c of this.ctxs.values()) {
      for (const imp of c.p.imports) {
        if (this.ctxs.has(imp.module)) continue;
        // Importing only macros (OBJECT-TYPE FROM RFC-1212) needs no source: they are built in.
        if (imp.symbols.every((s) => MACROS.has(s))) continue;
        c.missing.add(imp.module);
      }
      if (full && (c.p.errors.some((e) => e.severity === 'error') || c.missing.size)) c.failed = true;
    }
    this.propagate(full);

    const built = new Map<Ctx, CompiledModule>();
    const live = [...this.ctxs.values()].filter((c) => !c.failed);
    for (const c of live) {
      const defs = c.p.defs;
      for (let i = 0; i < defs.length; i++) if (OID_KINDS.has(defs[i]!.kind)) this.defOid(c, defs[i]!);
    }
    const structure = this.structure(live);
    for (const c of live) {
      this.opts.onSource?.(c.p.file);
      built.set(c, this.buildModule(c, structure));
    }
    this.opts.onSource?.(undefined);
    this.inheritAugmentedIndex(built);
    for (const c of live) if (c.errors.some((e) => e.limit)) c.failed = true;
    if (full) for (const c of live) if (c.errors.length) c.failed = true;
    this.propagate(full);

    // The compiled JSON, made once here: its size is a limit, and the store persists this text.
    const json = new Map<string, string>();
    let tooBig = false;
    for (const c of live) {
      const m = built.get(c)!;
      if (c.failed) continue;
      // (errors only remain in a compiled module in partial mode; there they are kept as warnings)
      m.diagnostics.push(...[...c.p.errors, ...c.errors].map((e) => ({ ...e, severity: 'warning' as const })), ...c.warnings);
      if (c.droppedErrors + c.droppedWarnings)
        m.diagnostics.push({
          severity: 'warning',
          file: c.p.file,
          line: 0,
          column: 0,
          module: c.p.name,
          message: `${c.droppedErrors + c.droppedWarnings} more diagnostics not shown (the first ${MIB_MAX_DIAGNOSTICS} of each kind are)`,
        });
      this.opts.onSource?.(c.p.file);
      const text = jsonWithin(m, this.limits.maxCompiledBytes);
      if (text !== undefined) {
        json.set(m.module, text);
        continue;
      }
      const setting = MIB_LIMIT_SETTINGS.maxCompiledBytes;
      c.errors.push({
        severity: 'error',
        file: c.p.file,
        line: c.p.line,
        column: c.p.column,
        token: c.p.name,
        module: c.p.name,
        message: `the compiled module ${c.p.name} would be larger than ${this.limits.maxCompiledBytes} characters of JSON (${setting}); split the module, or raise ${setting}`,
        limit: setting,
      });
      c.failed = true;
      tooBig = true;
    }
    if (tooBig) this.propagate(full);

    const modules: CompiledModule[] = [];
    for (const c of this.ctxs.values()) {
      const m = built.get(c);
      if (!c.failed && m) {
        modules.push(m);
        continue;
      }
      json.delete(c.p.name);
      const errors = [...c.p.errors, ...c.errors];
      // One diagnostic per import, up to the limit (an IMPORTS list may name thousands of modules).
      const firstImport = new Map<string, (typeof c.p.imports)[number]>();
      for (const imp of c.p.imports) if (!firstImport.has(imp.module)) firstImport.set(imp.module, imp);
      const importDiags: MibDiagnostic[] = [];
      for (const mod of c.missing)
        if (importDiags.length < MIB_MAX_DIAGNOSTICS) importDiags.push(this.importDiag(c, firstImport.get(mod), mod, `imports from missing module ${mod}`));
      for (const mod of c.failedImports)
        if (importDiags.length < MIB_MAX_DIAGNOSTICS)
          importDiags.push(this.importDiag(c, firstImport.get(mod), mod, `imports from module ${mod}, which failed`));
      errors.push(...importDiags);
      const more = c.droppedErrors + c.missing.size + c.failedImports.size - importDiags.length;
      if (more)
        errors.push({
          severity: 'error',
          file: c.p.file,
          line: 0,
          column: 0,
          module: c.p.name,
          message: `${more} more errors not shown (the first ${MIB_MAX_DIAGNOSTICS} of each kind are)`,
        });
      const limit = errors.find((e) => e.limit)?.limit;
      failed.push({
        module: c.p.name,
        file: c.p.file,
        ...(c.group !== undefined ? { group: c.group } : {}),
        missing: [...c.missing].sort(),
        failedImports: [...c.failedImports].sort(),
        errors,
        ...(limit ? { limit } : {}),
      });
    }
    modules.sort((a, b) => (a.module < b.module ? -1 : a.module > b.module ? 1 : 0));
    return { modules, failed, shadowed, json };
  }

  /** One source per module name (preferSource); the losers are reported as shadowed. */
  private pickSources(parsed: { p: ParsedModule; group?: string }[]): ShadowedModule[] {
    const best = new Map<string, { p: ParsedModule; group?: string; lu?: string }>();
    const losers: { p: ParsedModule; group?: string; lu?: string; name: string }[] = [];
    for (const x of parsed) {
      const cand = { ...x, lu: lastUpdated(x.p) };
      const cur = best.get(x.p.name);
      if (!cur) best.set(x.p.name, cand);
      else if (preferSource({ group: cand.group, lastUpdated: cand.lu }, { group: cur.group, lastUpdated: cur.lu }, this.rank)) {
        losers.push({ ...cur, name: x.p.name });
        best.set(x.p.name, cand);
      } else losers.push({ ...cand, name: x.p.name });
    }
    for (const [name, x] of best) {
      const defs = new Map<string, Definition>();
      const pd = x.p.defs;
      for (let i = 0; i < pd.length; i++) if (!defs.has(pd[i]!.name)) defs.set(pd[i]!.name, pd[i]!);
      const imports = new Map<string, string>();
      for (const imp of x.p.imports) for (const s of imp.symbols) imports.set(s, imp.module);
      this.ctxs.set(name, {
        p: x.p,
        group: x.group,
        defs,
        imports,
        implicit: new Map(),
        errors: [],
        warnings: [],
        missing: new Set(),
        failedImports: new Set(),
        failed: false,
        droppedErrors: 0,
        droppedWarnings: 0,
      });
    }
    return losers.map((l) => {
      const w = best.get(l.name)!;
      return {
        module: l.name,
        file: l.p.file,
        ...(l.group !== undefined ? { group: l.group } : {}),
        ...(l.lu ? { lastUpdated: l.lu } : {}),
        by: { file: w.p.file, ...(w.group !== undefined ? { group: w.group } : {}), ...(w.lu ? { lastUpdated: w.lu } : {}) },
      };
    });
  }

  /** A module importing from a failed module fails too (to a fixpoint; cycles are fine). Mode `full` only. */
  private propagate(full: boolean): void {
    if (!full) return;
    for (let changed = true; changed; ) {
      changed = false;
      for (const c of this.ctxs.values()) {
        for (const imp of c.p.imports) {
          const t = this.ctxs.get(imp.module);
          if (t?.failed && !c.failedImports.has(imp.module)) {
            c.failedImports.add(imp.module);
            if (!c.failed) changed = true;
            c.failed = true;
          }
        }
      }
    }
  }

  // ---- symbols

  /** The module that defines the last symbol find() returned */
  private found!: Ctx;

  /**
   * The definition a name refers to in module c (its own, or through imports); the defining module
   * is left in `found` (no result object per call).
   */
  private find(c: Ctx, name: string): Definition | undefined {
    for (let depth = 0; ; depth++) {
      const d = c.defs.get(name);
      if (d) {
        this.found = c;
        return d;
      }
      const from = c.imports.get(name);
      if (from === undefined || depth > 8) return undefined;
      const t = this.ctxs.get(from);
      if (!t) return undefined;
      c = t;
    }
  }

  /** Fallback for a name used without import: the OID-valued definitions of that name anywhere. */
  private global(name: string): Resolved[] {
    if (!this.globalNames) {
      this.globalNames = new Map();
      for (const c of this.ctxs.values())
        for (const d of c.p.defs)
          if (OID_KINDS.has(d.kind)) {
            const l = this.globalNames.get(d.name);
            if (l) l.push({ ctx: c, def: d });
            else this.globalNames.set(d.name, [{ ctx: c, def: d }]);
          }
    }
    return this.globalNames.get(name) ?? [];
  }

  // ---- OIDs

  private defOid(c: Ctx, d: Definition): string | null {
    const memo = this.oidMemo.get(d);
    if (memo !== undefined) return memo;
    // Each definition on the way is a recursive call: a chain deeper than an OID may be is cut
    // (and resolved again from its own start, where it may be shallow enough).
    if (this.oidDepth >= this.limits.maxOidDepth) {
      this.tooDeep = true;
      return null;
    }
    this.oidDepth++;
    this.oidMemo.set(d, null); // cycle guard
    let oid: string | null = null;
    if (d.kind === 'trap-type') {
      const ent = d.enterprise ? this.oidValue(c, d.enterprise, d) : null;
      if (!d.enterprise) this.err(c, d, `TRAP-TYPE ${d.name} has no ENTERPRISE`);
      // RFC 3584 §3: an SMIv1 trap maps to the notification OID enterprise.0.specific-trap
      if (ent !== null) oid = this.deepEnough(c, d, arcs(ent) + 2) ? `${ent}.0.${d.trapNumber}` : null;
    } else if (d.oid) oid = this.oidValue(c, d.oid, d);
    this.oidDepth--;
    if (this.tooDeep) {
      if (this.oidDepth > 0) {
        this.oidMemo.delete(d);
        return null;
      }
      this.tooDeep = false;
      const setting = MIB_LIMIT_SETTINGS.maxOidDepth;
      this.err(
        c,
        d,
        `${d.name}: its OID is defined through more than ${this.limits.maxOidDepth} nested definitions, deeper than an OID may be (${setting}=${this.limits.maxOidDepth})`,
        setting,
      );
    }
    this.oidMemo.set(d, oid);
    return oid;
  }

  /** False, with the error, when an OID of `n` sub-identifiers is deeper than the limit. */
  private deepEnough(c: Ctx, d: Definition, n: number): boolean {
    if (n <= this.limits.maxOidDepth) return true;
    const setting = MIB_LIMIT_SETTINGS.maxOidDepth;
    this.err(
      c,
      d,
      `${d.name}: its OID has more than ${this.limits.maxOidDepth} sub-identifiers (${setting}=${this.limits.maxOidDepth}; SNMP allows 128)`,
      setting,
    );
    return false;
  }

  private oidValue(c: Ctx, comps: OidComponent[], d: Definition): string | null {
    const first = comps[0]!;
    let oid: string | null;
    if (first.num !== undefined) oid = String(first.num);
    else oid = this.nameOid(c, first.name!, d);
    if (oid === null) return null;
    // Checked before the OID grows: a long OID value would otherwise name one deeper OID per component.
    if (!this.deepEnough(c, d, arcs(oid) + comps.length - 1)) return null;
    for (let k = 1; k < comps.length; k++) {
      const cp = comps[k]!;
      if (cp.num === undefined) {
        this.err(c, d, `${d.name}: OID component '${cp.name}' has no number`);
        return null;
      }
      oid += '.' + cp.num;
      if (cp.name !== undefined && !c.implicit.has(cp.name) && !c.defs.has(cp.name)) c.implicit.set(cp.name, oid);
    }
    return oid;
  }

  private nameOid(c: Ctx, name: string, user: Definition): string | null {
    const hit = this.find(c, name);
    if (hit && OID_KINDS.has(hit.kind)) {
      const o = this.defOid(this.found, hit);
      if (o === null && !this.tooDeep) this.err(c, user, `${user.name}: the OID of '${name}' does not resolve`);
      return o;
    }
    const root = ROOTS[name];
    if (root !== undefined) return root;
    const imp = c.implicit.get(name);
    if (imp !== undefined) return imp;
    const from = c.imports.get(name);
    if (from === undefined) {
      // Used without import: net-snmp resolves such names globally; accept one unambiguous answer.
      const cands = this.global(name);
      if (cands.length) {
        const oids = new Set(cands.map((r) => this.defOid(r.ctx, r.def)));
        if (oids.size === 1 && !oids.has(null)) {
          this.warn(c, user, `'${name}' is used without being imported; taken from ${cands[0]!.ctx.p.name}`);
          return [...oids][0]!;
        }
        if (this.tooDeep) return null;
      }
      this.err(c, user, `${user.name}: unknown parent '${name}' (not defined in ${c.p.name} and not imported)`);
    } else if (!this.ctxs.has(from)) this.err(c, user, `${user.name}: parent '${name}' comes from missing module ${from}`);
    else this.err(c, user, `${user.name}: '${name}' is imported from ${from}, which does not define it`);
    return null;
  }

  // ---- types

  private syntaxOf(c: Ctx, ast: TypeAst, user: Definition): CompiledSyntax {
    let out: CompiledSyntax;
    if (ast.base) {
      let base: BaseType;
      if (ast.tag?.cls === 'APPLICATION') base = TAG_BASE[ast.tag.num] ?? 'unknown';
      else if (ast.base === 'CHOICE') base = 'unknown';
      else base = ast.base;
      out = { type: ast.base === 'SEQUENCE OF' ? `SEQUENCE OF ${ast.of}` : ast.base, base };
    } else {
      const name = ast.ref!;
      const def = this.find(c, name);
      if (def && (def.kind === 'type' || def.kind === 'textual-convention')) {
        const from = this.found;
        const inner = this.namedSyntax(from, def);
        out = { type: name, typeModule: from.p.name, base: inner?.base ?? 'unknown' };
        if (def.kind === 'textual-convention') {
          out.tc = { module: from.p.name, name };
          const hint = def.displayHint ?? inner?.displayHint;
          if (hint !== undefined) out.displayHint = hint;
        } else if (!SMI_BASE[name] && inner && inner.base !== 'SEQUENCE' && inner.base !== 'unknown') {
          // An SMIv1 type assignment (`DisplayString ::= OCTET STRING`) plays the part of a TC.
          out.tc = { module: from.p.name, name };
          if (inner?.displayHint !== undefined) out.displayHint = inner.displayHint;
        }
        if (inner?.enums) out.enums = inner.enums;
        if (inner?.ranges) out.ranges = inner.ranges;
        if (inner?.sizes) out.sizes = inner.sizes;
      } else if (SMI_BASE[name]) {
        out = { type: name, base: SMI_BASE[name]! };
        if (!c.imports.has(name) && !c.defs.has(name)) this.warn(c, user, `type ${name} is used without being imported`);
      } else {
        out = { type: name, base: 'unknown' };
        this.warn(c, user, `${user.name}: unknown type ${name}`);
      }
    }
    if (ast.enums) out.enums = enumObject(ast.enums);
    if (ast.ranges) out.ranges = ast.ranges;
    if (ast.sizes) out.sizes = ast.sizes;
    return out;
  }

  /** The resolved SYNTAX of a type or textual-convention definition (memoised). */
  private namedSyntax(c: Ctx, d: Definition): CompiledSyntax | null {
    if (this.typeMemo.has(d)) return this.typeMemo.get(d)!;
    // A chain of types is a recursive call per type; real ones are two or three long.
    if (this.typeDepth >= MAX_NESTING) {
      this.err(c, d, `type ${d.name}: defined through more than ${MAX_NESTING} nested types`, `SMI nesting (${MAX_NESTING} levels)`);
      this.typeMemo.set(d, null);
      return null;
    }
    this.typeMemo.set(d, null); // cycle guard
    let s: CompiledSyntax | null = null;
    const ast = d.syntax;
    if (ast) {
      this.typeDepth++;
      s = this.syntaxOf(c, ast, d);
      this.typeDepth--;
      // The SMI's own types (Counter32 ::= [APPLICATION 1] IMPLICIT INTEGER (0..4294967295)) are
      // base types; their value range is implied by the type, not shown as a constraint.
      const smi = SMI_BASE[d.name];
      if (smi && (ast.tag?.cls === 'APPLICATION' || ast.base === 'CHOICE' || d.name === 'Integer32')) s = { type: s.type, base: smi };
    }
    this.typeMemo.set(d, s);
    return s;
  }

  // ---- structure

  /**
   * OIDs of tables and rows over all live modules (a column's row may sit in another module). A row
   * has INDEX or AUGMENTS, or sits under a table with the table's SEQUENCE OF type. Old MIBs that put
   * INDEX on the table and the columns right under it (UCD-SNMP-MIB-OLD) get columns too.
   */
  private structure(live: Ctx[]): Structure {
    const tables = new Map<string, Definition>();
    const rows = new Set<string>();
    const objs: Definition[] = [];
    const objOids: string[] = [];
    for (const c of live) {
      const defs = c.p.defs;
      for (let i = 0; i < defs.length; i++) {
        const d = defs[i]!;
        if (d.kind !== 'object-type') continue;
        const o = this.oidMemo.get(d);
        if (!o) continue;
        if (d.syntax?.base === 'SEQUENCE OF') tables.set(o, d);
        else {
          objs.push(d);
          objOids.push(o);
        }
      }
    }
    for (let i = 0; i < objs.length; i++) {
      const d = objs[i]!;
      const o = objOids[i]!;
      const table = tables.get(o.slice(0, o.lastIndexOf('.')));
      if (d.index || d.augments || (table && (!table.index || d.syntax?.ref === table.syntax!.of))) rows.add(o);
    }
    const columnParents = new Set(rows);
    for (const [o, t] of tables) if (t.index) columnParents.add(o);
    return { tables: new Set(tables.keys()), rows, columnParents };
  }

  private buildModule(c: Ctx, st: Structure): CompiledModule {
    const p = c.p;
    const nodes: CompiledNode[] = [];
    const types: CompiledType[] = [];
    const m: CompiledModule = {
      format: MIB_FORMAT,
      module: p.name,
      file: p.file,
      ...(c.group !== undefined ? { group: c.group } : {}),
      smi: p.smi,
      imports: p.imports.map((i) => ({ module: i.module, symbols: i.symbols })),
      nodes,
      types,
      diagnostics: [],
    };
    const defs = p.defs;
    for (let i = 0; i < defs.length; i++) {
      const d = defs[i]!;
      if (d.kind === 'type' || d.kind === 'textual-convention') {
        if (!d.syntax || d.syntax.base === 'SEQUENCE' || d.syntax.base === 'CHOICE') continue;
        const syntax = this.namedSyntax(c, d);
        if (!syntax) continue;
        const t: CompiledType = { name: d.name, kind: d.kind, line: d.line, syntax };
        if (d.status !== undefined) t.status = d.status;
        if (d.description !== undefined) t.description = d.description;
        if (d.reference !== undefined) t.reference = d.reference;
        if (d.displayHint !== undefined) t.displayHint = d.displayHint;
        types.push(t);
        continue;
      }
      if (!OID_KINDS.has(d.kind)) continue;
      const oid = this.oidMemo.get(d);
      if (!oid) continue; // the error is recorded
      const n: CompiledNode = { name: d.name, module: p.name, oid, kind: this.kindOf(d, oid, st), line: d.line };
      // (plain assignments: a loop over key names is slow before the JIT warms up)
      if (d.status !== undefined) n.status = d.status;
      if (d.description !== undefined) n.description = d.description;
      if (d.reference !== undefined) n.reference = d.reference;
      if (d.access !== undefined) n.access = d.access;
      if (d.units !== undefined) n.units = d.units;
      if (d.defval !== undefined) n.defval = d.defval;
      if (d.syntax) n.syntax = this.syntaxOf(c, d.syntax, d);
      if (d.index) n.index = d.index.map((x) => ({ ...this.ref(c, x.name, d, true), ...(x.implied ? { implied: true as const } : {}) }));
      if (d.augments) n.augments = this.ref(c, d.augments, d);
      if (d.objects) n.objects = d.objects.map((x) => this.ref(c, x, d));
      if (d.groups) n.objects = d.groups.map((x) => this.ref((x.module && this.ctxs.get(x.module)) || c, x.name, d));
      if (d.kind === 'trap-type') {
        n.enterprise = oid.slice(0, oid.length - `.0.${d.trapNumber}`.length);
        n.trapNumber = d.trapNumber!;
      }
      if (d.kind === 'module-identity') {
        m.identity = { name: d.name, oid };
        const id = m.identity;
        if (d.lastUpdated !== undefined) id.lastUpdated = d.lastUpdated;
        if (d.organization !== undefined) id.organization = d.organization;
        if (d.contactInfo !== undefined) id.contactInfo = d.contactInfo;
        if (d.description !== undefined) id.description = d.description;
        if (d.revisions !== undefined) id.revisions = d.revisions;
      }
      nodes.push(n);
    }
    for (const [name, oid] of c.implicit) if (!c.defs.has(name)) nodes.push({ name, module: p.name, oid, kind: 'node', line: 0 });
    return m;
  }

  private kindOf(d: Definition, oid: string, st: Structure): NodeKind {
    switch (d.kind) {
      case 'object-type':
        if (st.tables.has(oid)) return 'table';
        if (st.rows.has(oid)) return 'row';
        return st.columnParents.has(oid.slice(0, oid.lastIndexOf('.'))) ? 'column' : 'scalar';
      case 'oid':
        return 'node';
      case 'notification-type':
        return 'notification';
      case 'trap-type':
        return 'trap';
      case 'module-compliance':
        return 'compliance';
      case 'agent-capabilities':
        return 'capabilities';
      default:
        return d.kind as NodeKind;
    }
  }

  /** A referenced symbol with its defining module and OID. */
  private ref(c: Ctx, name: string, user: Definition, indexTypeOk = false): SymbolRef {
    const def = this.find(c, name);
    const from = def ? this.found : undefined;
    if (def && OID_KINDS.has(def.kind)) {
      const oid = this.defOid(from!, def);
      return oid ? { module: from!.p.name, name, oid } : { module: from!.p.name, name };
    }
    // SMIv1 allows a type as an index (`INDEX { INTEGER }`)
    if (indexTypeOk && name.charCodeAt(0) >= 65 && name.charCodeAt(0) <= 90) return { module: from?.p.name ?? '', name };
    const g = this.global(name);
    if (g.length) {
      const oid = this.defOid(g[0]!.ctx, g[0]!.def);
      this.warn(c, user, `'${name}' is used without being imported; taken from ${g[0]!.ctx.p.name}`);
      return oid ? { module: g[0]!.ctx.p.name, name, oid } : { module: g[0]!.ctx.p.name, name };
    }
    this.warn(c, user, `${user.name}: '${name}' does not resolve`);
    return { module: c.imports.get(name) ?? '', name };
  }

  /** A row that AUGMENTS another takes that row's INDEX. */
  private inheritAugmentedIndex(built: Map<Ctx, CompiledModule>): void {
    const rows = new Map<string, CompiledNode>();
    for (const m of built.values()) for (const n of m.nodes) if (n.kind === 'row') rows.set(`${m.module}::${n.name}`, n);
    for (const n of rows.values()) {
      let cur: CompiledNode | undefined = n;
      for (let hops = 0; cur && !cur.index && cur.augments && hops < 8; hops++) cur = rows.get(`${cur.augments.module}::${cur.augments.name}`);
      if (cur && cur !== n && cur.index) n.index = cur.index;
    }
  }

  // ---- diagnostics

  // Each list keeps MIB_MAX_DIAGNOSTICS and counts the rest; a breached limit is always kept (it
  // says why the module failed).
  private err(c: Ctx, d: Definition, message: string, limit?: string): void {
    if (c.errors.length >= MIB_MAX_DIAGNOSTICS && !(limit && !c.errors.some((e) => e.limit))) return void c.droppedErrors++;
    c.errors.push({ severity: 'error', file: c.p.file, line: d.line, column: d.col, token: d.name, module: c.p.name, message, ...(limit ? { limit } : {}) });
  }
  private warn(c: Ctx, d: Definition, message: string): void {
    if (c.warnings.length >= MIB_MAX_DIAGNOSTICS) return void c.droppedWarnings++;
    c.warnings.push({ severity: 'warning', file: c.p.file, line: d.line, column: d.col, token: d.name, module: c.p.name, message });
  }
  private importDiag(c: Ctx, imp: { line: number; column: number } | undefined, mod: string, message: string): MibDiagnostic {
    return { severity: 'error', file: c.p.file, line: imp?.line ?? c.p.line, column: imp?.column ?? 0, token: mod, module: c.p.name, message };
  }
}

/** Sub-identifiers of a dotted OID. */
function arcs(oid: string): number {
  let n = 1;
  for (let i = oid.indexOf('.'); i >= 0; i = oid.indexOf('.', i + 1)) n++;
  return n;
}

function lastUpdated(p: ParsedModule): string | undefined {
  const defs = p.defs;
  for (let i = 0; i < defs.length; i++) if (defs[i]!.kind === 'module-identity') return defs[i]!.lastUpdated;
  return undefined;
}

/** Object.fromEntries as a plain loop (the builtin is slow before the JIT warms up). */
function enumObject(entries: [string, number][]): Record<string, number> {
  const o: Record<string, number> = {};
  for (let i = 0; i < entries.length; i++) o[entries[i]![0]] = entries[i]![1];
  return o;
}
