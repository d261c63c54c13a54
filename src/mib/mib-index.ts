// In-memory index over compiled modules (the active bundle): numeric <-> symbolic resolution with
// longest-prefix matching for instances, subtree walks, search and node detail with breadcrumb.
// Built from CompiledModule objects only, so it works the same from a fresh compile or from the
// JSON files persisted in SVC_MIB_DIR.
import { smiDate } from './compiler.js';
import type { CompiledModule, CompiledNode, CompiledSyntax, NodeKind, SymbolRef } from './types.js';

/** A node as the index serves it (the compiled node, which names its module). */
export type MibNode = CompiledNode;

export interface Resolution {
  /** numeric OID of the input, without leading dot */
  oid: string;
  /** `MODULE::name.suffix` (or the numeric OID when nothing in it is known) */
  symbolic: string;
  /** the longest known prefix; absent when no node matches at all */
  node?: MibNode;
  /** instance part after the node (`3` in ifInOctets.3); '' for the node itself */
  suffix: string;
}

export interface TreeNode {
  oid: string;
  /** absent for an OID with no definition (an arc that only appears inside others) */
  name?: string;
  module?: string;
  kind?: NodeKind;
  type?: string;
  access?: string;
  /** number of direct children (also when `children` is cut by depth) */
  childCount: number;
  children?: TreeNode[];
}

export interface Crumb {
  oid: string;
  name?: string;
  module?: string;
}

export interface NodeDetail extends MibNode {
  /** root first, the node itself last */
  breadcrumb: Crumb[];
  /** the same OID defined by other modules */
  alsoDefinedIn: string[];
  children: Crumb[];
  /** notifications and traps: OBJECTS/VARIABLES with their definitions */
  members?: (SymbolRef & { kind?: NodeKind; syntax?: CompiledSyntax; access?: string; description?: string })[];
}

export interface SearchOptions {
  module?: string;
  /** node kinds to keep */
  kinds?: NodeKind[];
  /** default 100 */
  limit?: number;
  /** also match descriptions (default true) */
  descriptions?: boolean;
}

/** An OID arc without leading zeros (`01` is 1, as snmptranslate reads it); as text, so huge arcs stay exact. */
export const canonicalArc = (digits: string): string => digits.replace(/^0+(?=[0-9])/, '');

export class OidSyntaxError extends Error {
  override name = 'OidSyntaxError';
}

interface Arc {
  oid: string;
  children: Map<number, Arc>;
  /** definitions at this OID, preferred first (see MibIndex) */
  defs: MibNode[];
  sorted?: Arc[];
}

const NUMERIC = /^\.?[0-9]+(?:\.[0-9]+)*$/;
const ROOT_NAMES: Record<string, number> = { ccitt: 0, iso: 1, 'joint-iso-ccitt': 2 };
const OBJECT_KINDS = new Set<NodeKind>(['scalar', 'table', 'row', 'column']);

/**
 * When modules define the same OID (RFC1213-MIB and IF-MIB both define ifInOctets), the preferred
 * definition is the SMIv2 one, then the module with the newest LAST-UPDATED, then by module name.
 */
export class MibIndex {
  private readonly root: Arc = { oid: '', children: new Map(), defs: [] };
  private readonly byQualified = new Map<string, MibNode>();
  private readonly byName = new Map<string, MibNode[]>();
  private readonly mods = new Map<string, CompiledModule>();

  constructor(modules: CompiledModule[]) {
    for (const m of modules) this.mods.set(m.module, m);
    const shared: Arc[] = [];
    for (const m of modules) {
      for (const n of m.nodes) {
        const node: MibNode = n;
        const arc = this.arc(n.oid, true)!;
        if (arc.defs.push(node) === 2) shared.push(arc);
        this.byQualified.set(`${m.module}::${n.name}`, node);
        const l = this.byName.get(n.name);
        if (l) l.push(node);
        else this.byName.set(n.name, [node]);
      }
    }
    const cmp = (a: MibNode, b: MibNode): number => {
      const ma = this.mods.get(a.module)!;
      const mb = this.mods.get(b.module)!;
      if (ma.smi !== mb.smi) return ma.smi === 'v2' ? -1 : 1;
      const da = smiDate(ma.identity?.lastUpdated);
      const db = smiDate(mb.identity?.lastUpdated);
      if (da !== db) return da > db ? -1 : 1;
      return a.module < b.module ? -1 : 1;
    };
    for (const a of shared) a.defs.sort(cmp);
    for (const l of this.byName.values()) if (l.length > 1) l.sort(cmp);
  }

  /** Modules in the index, sorted by name. */
  modules(): CompiledModule[] {
    return [...this.mods.values()].sort((a, b) => (a.module < b.module ? -1 : 1));
  }

  module(name: string): CompiledModule | undefined {
    return this.mods.get(name);
  }

  /** `MODULE::name` or a bare name (the preferred definition when several modules have it). */
  lookup(name: string): MibNode | undefined {
    const q = name.indexOf('::');
    if (q >= 0) return this.byQualified.get(name);
    return this.byName.get(name)?.[0];
  }

  /** Every definition of exactly this OID, preferred first. */
  definitions(oid: string): MibNode[] {
    return this.arc(oid, false)?.defs ?? [];
  }

  /** Numeric -> symbolic by longest prefix: `1.3.6.1.2.1.2.2.1.10.3` -> `IF-MIB::ifInOctets.3`. */
  toSymbolic(oid: string): Resolution {
    if (!NUMERIC.test(oid)) throw new OidSyntaxError(`'${oid}' is not a numeric OID`);
    // Canonical arcs (`01` is 1, as snmptranslate reads it); stripping the zeros keeps huge arcs exact.
    const parts = (oid.charCodeAt(0) === 46 ? oid.slice(1) : oid).split('.').map(canonicalArc);
    let arc = this.root;
    let best: { node: MibNode; depth: number } | undefined;
    for (let k = 0; k < parts.length; k++) {
      const next = arc.children.get(Number(parts[k]));
      if (!next) break;
      arc = next;
      if (arc.defs.length) best = { node: arc.defs[0]!, depth: k + 1 };
    }
    const numeric = parts.join('.');
    if (!best) return { oid: numeric, symbolic: numeric, suffix: numeric };
    const suffix = parts.slice(best.depth).join('.');
    return { oid: numeric, symbolic: `${best.node.module}::${best.node.name}${suffix ? '.' + suffix : ''}`, node: best.node, suffix };
  }

  /**
   * Symbolic (or numeric) -> numeric. Accepts `MODULE::name[.suffix]`, a bare `name[.suffix]`
   * (net-snmp's -IR random access), a dotted path of names and numbers
   * (`iso.org.dod.internet.mgmt.mib-2.system.sysDescr.0`, `.1.3.6.1.2.1.1.1.0`).
   * Returns null when a name is unknown; throws OidSyntaxError on a malformed string.
   */
  toNumeric(text: string): Resolution | null {
    const s = text.trim();
    if (!s) throw new OidSyntaxError('empty OID');
    if (NUMERIC.test(s)) return this.toSymbolic(s);
    let rest = s;
    let start: number[] = [];
    let arc: Arc | undefined = this.root;
    const q = s.indexOf('::');
    if (q >= 0) {
      const mod = s.slice(0, q);
      rest = s.slice(q + 2);
      const name = rest.split('.')[0]!;
      const node = this.byQualified.get(`${mod}::${name}`);
      if (!node) return null;
      start = node.oid.split('.').map(Number);
      rest = rest.slice(name.length);
      arc = this.arc(node.oid, false);
    } else if (s.charCodeAt(0) !== 46) {
      const name = s.split('.')[0]!;
      if (!(name in ROOT_NAMES) || this.byName.has(name)) {
        const node = this.lookup(name);
        if (!node) return null;
        start = node.oid.split('.').map(Number);
        rest = s.slice(name.length);
        arc = this.arc(node.oid, false);
      }
    }
    const path = [...start];
    const comps = rest.split('.');
    if (comps[0] === '') comps.shift();
    for (const c of comps) {
      if (c === '') throw new OidSyntaxError(`'${text}' has an empty OID component`);
      if (/^[0-9]+$/.test(c)) {
        path.push(Number(c));
        arc = arc?.children.get(Number(c));
        continue;
      }
      // a name below the current arc (or a root name at the top)
      let found: Arc | undefined;
      if (arc) for (const ch of arc.children.values()) if (ch.defs.some((d) => d.name === c)) found = ch;
      if (!found && path.length === 0 && c in ROOT_NAMES) {
        path.push(ROOT_NAMES[c]!);
        arc = this.root.children.get(ROOT_NAMES[c]!);
        continue;
      }
      if (!found) return null;
      arc = found;
      path.push(Number(found.oid.slice(found.oid.lastIndexOf('.') + 1)));
    }
    if (!path.length) throw new OidSyntaxError(`'${text}' names no OID`);
    return this.toSymbolic(path.join('.'));
  }

  /** Numeric or symbolic -> resolution; null when unknown. */
  resolve(text: string): Resolution | null {
    return this.toNumeric(text);
  }

  /** Everything about one node (by numeric OID or name); undefined when no node has exactly that OID. */
  node(oidOrName: string): NodeDetail | undefined {
    const r = NUMERIC.test(oidOrName) ? this.toSymbolic(oidOrName) : this.toNumeric(oidOrName);
    if (!r?.node || r.suffix) return undefined;
    const arc = this.arc(r.oid, false)!;
    const n = r.node;
    const detail: NodeDetail = {
      ...n,
      breadcrumb: this.breadcrumb(r.oid),
      alsoDefinedIn: arc.defs.slice(1).map((d) => d.module),
      children: this.sortedChildren(arc).map((c) => crumb(c)),
    };
    if (n.objects && (n.kind === 'notification' || n.kind === 'trap')) {
      detail.members = n.objects.map((o) => {
        const d = this.byQualified.get(`${o.module}::${o.name}`) ?? (o.oid ? this.arc(o.oid, false)?.defs[0] : undefined);
        if (!d) return { ...o };
        return {
          ...o,
          kind: d.kind,
          ...(d.syntax ? { syntax: d.syntax } : {}),
          ...(d.access ? { access: d.access } : {}),
          ...(d.description ? { description: d.description } : {}),
        };
      });
    }
    return detail;
  }

  /** Root first; arcs without a definition have no name. */
  breadcrumb(oid: string): Crumb[] {
    const out: Crumb[] = [];
    let arc = this.root;
    for (const p of oid.split('.')) {
      const next = arc.children.get(Number(p));
      if (!next) break;
      arc = next;
      out.push(crumb(arc));
    }
    return out;
  }

  /**
   * The subtree under `rootOid` (numeric or symbolic) down to `depth` levels below it (0: the root
   * only). With `module`, only arcs that lead to that module's definitions are kept.
   */
  subtree(rootOid: string, depth: number, module?: string): TreeNode | undefined {
    const r = this.toNumeric(rootOid);
    if (!r) return undefined;
    const arc = this.arc(r.oid, false);
    if (!arc) return undefined;
    return this.tree(arc, depth, module);
  }

  /** A module's nodes as a tree under their common top arcs, optionally only some kinds. */
  moduleTree(module: string, kinds?: NodeKind[]): TreeNode[] {
    const m = this.mods.get(module);
    if (!m) return [];
    const keep = kinds?.length ? new Set(kinds) : undefined;
    const mine = new Set(m.nodes.filter((n) => !keep || keep.has(n.kind)).map((n) => n.oid));
    // Tops: module nodes whose parent is not a module node.
    const tops = [...mine].filter((o) => !mine.has(o.slice(0, o.lastIndexOf('.')))).sort(compareOids);
    const build = (arc: Arc): TreeNode => {
      const kids = this.sortedChildren(arc).filter((c) => mine.has(c.oid));
      return { ...crumbOf(arc, module), childCount: kids.length, ...(kids.length ? { children: kids.map(build) } : {}) };
    };
    return tops.map((o) => build(this.arc(o, false)!));
  }

  /** Nodes whose name (first) or description matches `q`, case-insensitive. */
  search(q: string, opts: SearchOptions = {}): MibNode[] {
    const needle = q.toLowerCase();
    const limit = opts.limit ?? 100;
    const kinds = opts.kinds?.length ? new Set(opts.kinds) : undefined;
    const exact: MibNode[] = [];
    const prefix: MibNode[] = [];
    const inName: MibNode[] = [];
    const inText: MibNode[] = [];
    for (const n of this.byQualified.values()) {
      if (opts.module && n.module !== opts.module) continue;
      if (kinds && !kinds.has(n.kind)) continue;
      const name = n.name.toLowerCase();
      if (name === needle) exact.push(n);
      else if (name.startsWith(needle)) prefix.push(n);
      else if (name.includes(needle)) inName.push(n);
      else if (opts.descriptions !== false && n.description?.toLowerCase().includes(needle)) inText.push(n);
    }
    const byOid = (a: MibNode, b: MibNode): number => compareOids(a.oid, b.oid);
    return [...exact.sort(byOid), ...prefix.sort(byOid), ...inName.sort(byOid), ...inText.sort(byOid)].slice(0, limit);
  }

  /** OBJECT-TYPE nodes (tables, rows, columns, scalars), by OID. */
  objects(module?: string): MibNode[] {
    return this.all(module).filter((n) => OBJECT_KINDS.has(n.kind));
  }

  /** NOTIFICATION-TYPE and TRAP-TYPE nodes, by OID. */
  notifications(module?: string): MibNode[] {
    return this.all(module).filter((n) => n.kind === 'notification' || n.kind === 'trap');
  }

  /** Every node, by OID (preferred definition first where several modules define one). */
  all(module?: string): MibNode[] {
    const out: MibNode[] = [];
    const walk = (arc: Arc): void => {
      for (const d of arc.defs) if (!module || d.module === module) out.push(d);
      for (const c of this.sortedChildren(arc)) walk(c);
    };
    walk(this.root);
    return out;
  }

  // ---- trie

  private arc(oid: string, create: boolean): Arc | undefined {
    let arc = this.root;
    let start = 0;
    for (;;) {
      const dot = oid.indexOf('.', start);
      const sub = Number(dot < 0 ? oid.slice(start) : oid.slice(start, dot));
      let next = arc.children.get(sub);
      if (!next) {
        if (!create) return undefined;
        next = { oid: dot < 0 ? oid : oid.slice(0, dot), children: new Map(), defs: [] };
        arc.children.set(sub, next);
        arc.sorted = undefined;
      }
      arc = next;
      if (dot < 0) return arc;
      start = dot + 1;
    }
  }

  private sortedChildren(arc: Arc): Arc[] {
    return (arc.sorted ??= [...arc.children.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]));
  }

  private tree(arc: Arc, depth: number, module?: string): TreeNode {
    let kids = this.sortedChildren(arc);
    if (module) kids = kids.filter((c) => this.hasModule(c, module));
    const t: TreeNode = { ...crumbOf(arc, module), childCount: kids.length };
    if (depth > 0 && kids.length) t.children = kids.map((c) => this.tree(c, depth - 1, module));
    return t;
  }

  private hasModule(arc: Arc, module: string): boolean {
    if (arc.defs.some((d) => d.module === module)) return true;
    for (const c of arc.children.values()) if (this.hasModule(c, module)) return true;
    return false;
  }
}

const ROOT_BY_NUMBER = ['ccitt', 'iso', 'joint-iso-ccitt'];

function crumb(arc: Arc): Crumb {
  const d = arc.defs[0];
  if (d) return { oid: arc.oid, name: d.name, module: d.module };
  const root = arc.oid.includes('.') ? undefined : ROOT_BY_NUMBER[Number(arc.oid)];
  return root ? { oid: arc.oid, name: root } : { oid: arc.oid };
}

function crumbOf(arc: Arc, module?: string): Omit<TreeNode, 'childCount'> {
  const d = (module && arc.defs.find((x) => x.module === module)) || arc.defs[0];
  if (!d) return crumb(arc);
  return {
    oid: arc.oid,
    name: d.name,
    module: d.module,
    kind: d.kind,
    ...(d.syntax ? { type: d.syntax.type } : {}),
    ...(d.access ? { access: d.access } : {}),
  };
}

/** Numeric OID order (1.3.6.1.2 < 1.3.6.1.10). */
export function compareOids(a: string, b: string): number {
  const x = a.split('.');
  const y = b.split('.');
  for (let k = 0; k < x.length && k < y.length; k++) {
    const d = Number(x[k]) - Number(y[k]);
    if (d) return d;
  }
  return x.length - y.length;
}
