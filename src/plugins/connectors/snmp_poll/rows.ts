// Varbinds into records. Flat: one record per target with a field per varbind (the MIB name, with
// its instance unless that is `.0`; the numeric OID when resolve_oids is off or the MIB does not
// know it). Rows (yield_rows): one record per table row, keyed by its index (from the row's INDEX
// clause, or the last index_depth arcs), with the INDEX objects' values and one field per column;
// tables that share one INDEX (ifTable and ifXTable, which AUGMENTS it) give one record per index.
// Values are JSON-exact (src/snmp/values.ts jsonValue): Counter64 beyond 2^53 is a decimal string.
import type { MibIndex, MibNode } from '../../../mib/index.js';
import { objectNode } from '../../../mib/varbinds.js';
import { jsonValue, type SnmpType, type VarBind } from '../../../snmp/values.js';
import type { Rec } from '../../types.js';

export interface RowOptions {
  /** The MIB index when resolve_oids is on (names, INDEX clauses); undefined: numeric names. */
  ix?: MibIndex;
  /** 0 = from the INDEX clause (without a MIB: the last arc); above 0: the last N arcs. */
  indexDepth: number;
  /** Add `_snmp_widths` for Counter32 (32) and Counter64 (64) fields. */
  classify: boolean;
  /**
   * MIB look-ups by the OID without its last arc (a column of a one-arc index, or a prefix of the
   * instance): a fleet's thousands of rows resolve each column once. Shared by one run's targets.
   */
  cache?: Map<string, MibNode | null>;
  /**
   * Column and index of a numeric OID split at its last arc (no MIB, index_depth 0), by the OID:
   * every row of every target names its fields with the same column strings. Shared by one run.
   */
  splits?: Map<string, Split>;
}

/** A numeric OID cut at its last arc: the column OID, the index and where the cut is. */
type Split = { column: string; index: string; cut: number };

function splitOf(oid: string, splits: Map<string, Split>, columns: Map<string, string>): Split {
  let s = splits.get(oid);
  if (s === undefined) {
    const cut = oid.lastIndexOf('.');
    const col = oid.slice(0, cut);
    // One string per column, so the records' field names are the same strings.
    let column = columns.get(col);
    if (column === undefined) columns.set(col, (column = col));
    s = { column, index: oid.slice(cut + 1), cut };
    if (splits.size > 100_000) splits.clear();
    splits.set(oid, s);
  }
  return s;
}

const columnNames = new Map<string, string>();

const WIDTH: Partial<Record<SnmpType, 32 | 64>> = { Counter32: 32, Counter64: 64 };
const ABSENT = new Set<SnmpType>(['NoSuchObject', 'NoSuchInstance', 'EndOfMibView']);

/** Whether a varbind carries no value (noSuchObject, noSuchInstance, endOfMibView). */
export const isAbsent = (vb: VarBind): boolean => ABSENT.has(vb.type);

function put(r: Rec, field: string, vb: VarBind, classify: boolean) {
  r[field] = jsonValue(vb);
  if (classify) {
    const w = WIDTH[vb.type];
    if (w) ((r._snmp_widths ??= {}) as Record<string, number>)[field] = w;
  }
}

/** The field name of a varbind in a flat record. */
export function flatName(vb: VarBind, ix: MibIndex | undefined, cache?: RowOptions['cache']): string {
  if (!ix) return vb.oid;
  const o = objectOf(ix, vb.oid, cache);
  if (!o) return vb.oid;
  return o.suffix === '0' || o.suffix === '' ? o.node.name : `${o.node.name}.${o.suffix}`;
}

/** One record of every varbind (get, or a walk without yield_rows); absent values are left out. */
export function flatRecord(vbs: VarBind[], base: Rec, opts: RowOptions): Rec {
  const r: Rec = { ...base };
  for (const vb of vbs) if (!isAbsent(vb)) put(r, flatName(vb, opts.ix, opts.cache), vb, opts.classify);
  return r;
}

/** The values of a row's INDEX objects from its index arcs; undefined when the arcs do not fit the clause. */
export function decodeIndex(ix: MibIndex, row: MibNode, arcs: number[]): Rec | undefined {
  const refs = row.index ?? [];
  if (!refs.length) return undefined;
  const out: Rec = {};
  let at = 0;
  for (let k = 0; k < refs.length; k++) {
    const ref = refs[k]!;
    const node = ix.lookup(`${ref.module}::${ref.name}`) ?? ix.lookup(ref.name);
    const base = node?.syntax?.base ?? 'INTEGER';
    const last = k === refs.length - 1;
    const take = (n: number) => {
      if (n < 0 || at + n > arcs.length) return undefined;
      const s = arcs.slice(at, at + n);
      at += n;
      return s;
    };
    let value: unknown;
    switch (base) {
      case 'IpAddress': {
        const s = take(4);
        if (!s || s.some((x) => x > 255)) return undefined;
        value = s.join('.');
        break;
      }
      case 'OCTET STRING':
      case 'BITS':
      case 'Opaque': {
        const size = node?.syntax?.sizes;
        const fixed = size?.length === 1 && size[0]![0] === size[0]![1] ? Number(size[0]![0]) : undefined;
        const n = fixed ?? (ref.implied && last ? arcs.length - at : arcs[at++]);
        const s = n === undefined ? undefined : take(n);
        if (!s || s.some((x) => x > 255)) return undefined;
        value = jsonValue({ oid: '', type: 'OctetString', value: Buffer.from(s) });
        break;
      }
      case 'OBJECT IDENTIFIER': {
        const n = ref.implied && last ? arcs.length - at : arcs[at++];
        const s = n === undefined ? undefined : take(n);
        if (!s) return undefined;
        value = s.join('.');
        break;
      }
      default: {
        const s = take(1);
        if (!s) return undefined;
        value = s[0];
      }
    }
    out[ref.name] = value;
  }
  return at === arcs.length ? out : undefined;
}

/**
 * Rows of walked tables, in the order their indexes first appear; varbinds outside a table
 * (scalars, unknown OIDs without index_depth) go into one extra flat record, returned last.
 */
export function rowRecords(walks: { root: string; vbs: VarBind[] }[], base: Rec, opts: RowOptions): Rec[] {
  const ix = opts.ix;
  if (!ix && opts.indexDepth === 0) return numericRows(walks, base, opts);
  const rows = new Map<string, { rec: Rec }>();
  const rest: VarBind[] = [];
  for (const { root, vbs } of walks) {
    for (const vb of vbs) {
      if (isAbsent(vb)) continue;
      let column: string;
      let index: string;
      let group: string;
      let indexValues: Rec | undefined;
      if (opts.indexDepth > 0) {
        const parts = vb.oid.split('.');
        if (parts.length <= opts.indexDepth) {
          rest.push(vb);
          continue;
        }
        const colOid = parts.slice(0, parts.length - opts.indexDepth).join('.');
        index = parts.slice(parts.length - opts.indexDepth).join('.');
        const node = ix?.definitions(colOid)[0];
        const rowNode = node?.kind === 'column' ? ix!.definitions(parentOf(colOid))[0] : undefined;
        column = node && ix ? node.name : colOid;
        group = rowNode ? indexKey(rowNode) : `root:${root}`;
        if (rowNode && ix) indexValues = decodeIndex(ix, rowNode, index.split('.').map(Number));
      } else {
        const o = ix ? objectOf(ix, vb.oid, opts.cache) : undefined;
        if (o && o.node.kind === 'column' && o.suffix) {
          const rowOid = parentOf(o.node.oid);
          const rowNode = ix!.definitions(rowOid)[0];
          column = o.node.name;
          index = o.suffix;
          group = rowNode ? indexKey(rowNode) : rowOid;
          if (rowNode) indexValues = decodeIndex(ix!, rowNode, index.split('.').map(Number));
        } else if (o && o.node.kind === 'scalar') {
          rest.push(vb);
          continue;
        } else {
          // Unknown to the MIB (or resolve_oids off): the last arc is the index, under the walked root.
          const cut = vb.oid.lastIndexOf('.');
          if (cut <= root.length) {
            rest.push(vb);
            continue;
          }
          column = vb.oid.slice(0, cut);
          index = vb.oid.slice(cut + 1);
          group = `root:${root}`;
        }
      }
      const key = `${group}\u0000${index}`;
      let row = rows.get(key);
      if (!row) {
        row = { rec: { ...base, index } };
        if (indexValues) Object.assign(row.rec, indexValues);
        rows.set(key, row);
      }
      put(row.rec, column, vb, opts.classify);
    }
  }
  const out = [...rows.values()].map((r) => r.rec);
  if (rest.length) out.push(flatRecord(rest, base, opts));
  return out;
}

/**
 * rowRecords without a MIB and with index_depth 0 (a fleet's usual numeric walk): the last arc is
 * the index, rows grouped by walked root. Same records (fields, order, values) as the general path.
 * Faster: no per-varbind strings, and each record is made from a template object of its fields
 * (see materialize), not by adding 20-odd fields one at a time (V8 then turns it into a slow
 * dictionary-mode object, costly to fill and to serialise).
 */
function numericRows(walks: { root: string; vbs: VarBind[] }[], base: Rec, opts: RowOptions): Rec[] {
  const splits = opts.splits ?? new Map<string, Split>();
  if (columnNames.size > 100_000) columnNames.clear();
  const rows: Row[] = [];
  const rest: VarBind[] = [];
  const groups = new Map<string, Map<string, Row>>();
  const colIds = new Map<string, number>();
  const colNames: string[] = [];
  const classify = opts.classify;
  for (const { root, vbs } of walks) {
    let group = groups.get(root);
    if (group === undefined) groups.set(root, (group = new Map()));
    for (const vb of vbs) {
      if (isAbsent(vb)) continue;
      const sp = splitOf(vb.oid, splits, columnNames);
      if (sp.cut <= root.length) {
        rest.push(vb);
        continue;
      }
      let row = group.get(sp.index);
      if (row === undefined) {
        row = { index: sp.index, vals: [], order: [], widths: undefined, widthsAt: -1 };
        group.set(sp.index, row);
        rows.push(row);
      }
      let id = colIds.get(sp.column);
      if (id === undefined) {
        id = colNames.length;
        colIds.set(sp.column, id);
        colNames.push(sp.column);
      }
      if (row.vals[id] === undefined) row.order.push(id);
      row.vals[id] = jsonValue(vb);
      if (classify) {
        const w = WIDTH[vb.type];
        if (w) {
          if (!row.widths) {
            row.widths = {};
            row.widthsAt = row.order.length;
          }
          row.widths[sp.column] = w;
        }
      }
    }
  }
  const out = materialize(rows, base, colNames);
  if (rest.length) out.push(flatRecord(rest, base, opts));
  return out;
}

interface Row {
  index: string;
  /** Values by column id. */
  vals: (string | number | null)[];
  /** Column ids in the order they were first set (the record's field order). */
  order: number[];
  widths: Record<string, number> | undefined;
  /** How many columns precede `_snmp_widths` (it comes right after the first counter). */
  widthsAt: number;
}

/**
 * The records of rows, each `{...base, index, <columns in order>, _snmp_widths after the first
 * counter}`. Rows with the same fields in the same order (a table's rows, usually all) are copies
 * of one template made by JSON.parse, which V8 keeps in fast mode; filling it sets existing fields.
 */
function materialize(rows: Row[], base: Rec, colNames: string[]): Rec[] {
  const out: Rec[] = [];
  const baseKeys = Object.keys(base);
  const templates = new Map<string, Rec>();
  let last: Row | undefined;
  let tmpl: Rec = {};
  for (const row of rows) {
    if (!last || !sameShape(last, row)) {
      const sig = `${row.widthsAt}|${row.order.join(',')}`;
      let t = templates.get(sig);
      if (!t) {
        const shape: Rec = {};
        for (const k of baseKeys) shape[k] = null;
        shape.index = null;
        row.order.forEach((id, k) => {
          shape[colNames[id]!] = null;
          if (k + 1 === row.widthsAt) shape._snmp_widths = null;
        });
        templates.set(sig, (t = JSON.parse(JSON.stringify(shape)) as Rec));
      }
      tmpl = t;
      last = row;
    }
    const r: Rec = { ...tmpl };
    for (const k of baseKeys) r[k] = base[k];
    r.index = row.index;
    const { vals, order } = row;
    for (let k = 0; k < order.length; k++) r[colNames[order[k]!]!] = vals[order[k]!]!;
    if (row.widths) r._snmp_widths = row.widths;
    out.push(r);
  }
  return out;
}

function sameShape(a: Row, b: Row): boolean {
  if (a.widthsAt !== b.widthsAt || a.order.length !== b.order.length) return false;
  for (let k = 0; k < a.order.length; k++) if (a.order[k] !== b.order[k]) return false;
  return true;
}

const parentOf = (oid: string) => oid.slice(0, oid.lastIndexOf('.'));

/** objectNode (src/mib/varbinds.ts), remembered by the OID's parent when the object lies above it. */
function objectOf(ix: MibIndex, oid: string, cache: RowOptions['cache']): { node: MibNode; suffix: string } | undefined {
  if (!cache) return objectNode(ix, oid);
  const parent = parentOf(oid);
  let node = cache.get(parent);
  if (node === undefined) {
    const o = objectNode(ix, oid);
    // Only an object strictly above the last arc is the same for every sibling OID.
    node = o && o.suffix && o.node.oid.length <= parent.length ? o.node : null;
    if (cache.size > 100_000) cache.clear();
    cache.set(parent, node);
    if (!node) return o;
  }
  if (!node) return objectNode(ix, oid);
  return { node, suffix: oid.slice(node.oid.length + 1) };
}

/** Rows of tables with the same INDEX objects (ifXTable AUGMENTS ifTable: both by ifIndex) share one record per index. */
function indexKey(row: MibNode): string {
  return row.index?.length ? `index:${row.index.map((r) => `${r.module}::${r.name}`).join(',')}` : `row:${row.oid}`;
}
