// Varbinds as operators read them, with what the MIB bundle knows: typed JSON values with names,
// enum labels, BITS names and DISPLAY-HINT forms; net-snmp style text lines (`snmpwalk -On`, or
// `-Ob` with MIB names); and the grouped table/scalar view of a MIB browser. Used by the console's
// walker and trap receiver, and meant for the engine's snmp_poll / snmp_trap `resolve_oids`.
import type { VarBind } from '../snmp/values.js';
import { isHexShown, isPrintable, jsonValue } from '../snmp/values.js';
import type { MibIndex, MibNode } from './mib-index.js';

/** A varbind as the parsed walk result, the trap events and the grouped view show it. */
export interface ParsedVarBind {
  oid?: string;
  /** `MODULE::name.instance` from the active MIB bundle (use_mibs / resolve_mibs). */
  name?: string;
  type: VarBind['type'];
  /** Numbers; Counter64 a number up to 2^53-1 and a decimal string above; OctetString text, or hex (see encoding). */
  value: string | number | null;
  /** `hex` when an OctetString is not printable text (and for Opaque). */
  encoding?: 'hex';
  /** INTEGER enumeration label (`up`), or the MIB name of an ObjectIdentifier value. */
  label?: string;
  /** BITS: names of the bits that are set. */
  bits?: string[];
  /** The value formatted by the object's DISPLAY-HINT (MAC addresses, DateAndTime, d-2...). */
  display?: string;
}

// ---------------------------------------------------------------------------------------------
// MIB knowledge about one varbind

/** The object type behind an instance OID (scalar or column with an instance suffix), if the MIB has it. */
const isObject = (n: MibNode | undefined): boolean => !!n && (n.kind === 'scalar' || n.kind === 'column');

/**
 * The object type (scalar or column) an instance OID belongs to, with the instance suffix. Looks
 * past names given to instances (DISMAN-EXPRESSION-MIB::sysUpTimeInstance is sysUpTime.0).
 */
export function objectNode(ix: MibIndex, oid: string): { node: MibNode; suffix: string } | undefined {
  let r = ix.toSymbolic(oid);
  for (let up = 0; r.node && !isObject(r.node) && up < 3 && r.node.oid.includes('.'); up++) r = ix.toSymbolic(parentOf(r.node.oid));
  if (!r.node || !isObject(r.node)) return undefined;
  return { node: r.node, suffix: oid.length > r.node.oid.length ? oid.slice(r.node.oid.length + 1) : '' };
}

/** The MIB name as net-snmp prints it (longest known prefix), `.1.3...` when nothing is known, and the object type. */
function objectOf(ix: MibIndex, oid: string): { node: MibNode | undefined; symbolic: string } {
  const r = ix.toSymbolic(oid);
  return { node: r.node && isObject(r.node) ? r.node : objectNode(ix, oid)?.node, symbolic: r.node ? r.symbolic : '.' + oid };
}

const parentOf = (oid: string) => oid.slice(0, oid.lastIndexOf('.'));

const enumNames = new WeakMap<object, Map<number, string>>();
function enumLabel(node: MibNode, n: number): string | undefined {
  const enums = node.syntax?.enums;
  if (!enums) return undefined;
  let m = enumNames.get(enums);
  if (!m) enumNames.set(enums, (m = new Map(Object.entries(enums).map(([k, v]) => [v, k]))));
  return m.get(n);
}

function setBits(node: MibNode, buf: Buffer): [string, number][] {
  const out: [string, number][] = [];
  for (const [name, pos] of Object.entries(node.syntax?.enums ?? {})) if (pos >> 3 < buf.length && buf[pos >> 3]! & (0x80 >> (pos & 7))) out.push([name, pos]);
  return out.sort((a, b) => a[1] - b[1]);
}

const INTEGER_BASES = new Set(['INTEGER', 'Integer32', 'Unsigned32', 'Gauge32', 'Counter32']);

// ---------------------------------------------------------------------------------------------
// DISPLAY-HINT (RFC 2579 3.1)

interface OctetHintPart {
  star: boolean;
  len: number;
  fmt: string;
  sep?: string;
  term?: string;
}

const hintCache = new Map<string, OctetHintPart[] | null>();

function parseOctetHint(hint: string): OctetHintPart[] | null {
  if (hintCache.has(hint)) return hintCache.get(hint)!;
  const parts: OctetHintPart[] = [];
  let i = 0;
  const free = (c: string | undefined) => c !== undefined && !/[0-9*]/.test(c);
  while (i < hint.length) {
    const star = hint[i] === '*';
    if (star) i++;
    const m = /^\d+/.exec(hint.slice(i));
    if (!m) return cacheHint(hint, null);
    i += m[0].length;
    const fmt = hint[i++];
    if (!fmt || !'xdoat'.includes(fmt)) return cacheHint(hint, null);
    const p: OctetHintPart = { star, len: Number(m[0]), fmt };
    if (free(hint[i])) p.sep = hint[i++];
    if (star && free(hint[i])) p.term = hint[i++];
    parts.push(p);
  }
  return cacheHint(hint, parts.length ? parts : null);
}

function cacheHint(hint: string, parts: OctetHintPart[] | null) {
  if (hintCache.size > 1000) hintCache.clear();
  hintCache.set(hint, parts);
  return parts;
}

/** Octets formatted by a DISPLAY-HINT as net-snmp does (hex without zero padding: `0:c:29:1:2:3`). */
export function formatOctetHint(hint: string, buf: Buffer): string | undefined {
  const parts = parseOctetHint(hint);
  if (!parts) return undefined;
  let out = '';
  let pos = 0;
  for (let k = 0; pos < buf.length; k++) {
    const p = parts[Math.min(k, parts.length - 1)]!;
    const reps = p.star ? buf[pos++]! : 1;
    for (let r = 0; r < reps && pos < buf.length; r++) {
      const chunk = buf.subarray(pos, pos + p.len);
      pos += chunk.length;
      if (p.fmt === 'a' || p.fmt === 't') out += chunk.toString(p.fmt === 'a' ? 'latin1' : 'utf8');
      else {
        let n = 0n;
        for (const b of chunk) n = (n << 8n) | BigInt(b);
        out += n.toString(p.fmt === 'x' ? 16 : p.fmt === 'o' ? 8 : 10);
      }
      const lastRep = r === reps - 1;
      if (p.sep && pos < buf.length && !(lastRep && p.term)) out += p.sep;
    }
    if (p.term && pos < buf.length) out += p.term;
  }
  return out;
}

/** An integer formatted by an INTEGER DISPLAY-HINT (`d-2` -> 12.34, `x`, `o`, `b`). */
export function formatIntegerHint(hint: string, n: number): string | undefined {
  const m = /^([dxob])(?:-(\d+))?$/.exec(hint.trim());
  if (!m) return undefined;
  if (m[1] !== 'd') return (n < 0 ? '-' : '') + Math.abs(n).toString(m[1] === 'x' ? 16 : m[1] === 'o' ? 8 : 2);
  const places = Number(m[2] ?? 0);
  if (!places) return String(n);
  const digits = String(Math.abs(n)).padStart(places + 1, '0');
  return `${n < 0 ? '-' : ''}${digits.slice(0, -places)}.${digits.slice(-places)}`;
}

function hinted(node: MibNode | undefined, vb: VarBind): string | undefined {
  const hint = node?.syntax?.displayHint;
  if (!hint) return undefined;
  if (Buffer.isBuffer(vb.value) && vb.type === 'OctetString') return formatOctetHint(hint, vb.value);
  if (typeof vb.value === 'number' && vb.type !== 'TimeTicks') return formatIntegerHint(hint, vb.value);
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Parsed form

/** The JSON form of a varbind; with a MIB index: its name, enum label, set BITS and DISPLAY-HINT form. */
export function describeVarBind(vb: VarBind, ix?: MibIndex, opts: { oid?: boolean; name?: boolean } = {}): ParsedVarBind {
  const o = ix ? objectOf(ix, vb.oid) : undefined;
  const node = o?.node;
  const e: ParsedVarBind = {
    ...(opts.oid !== false ? { oid: vb.oid } : {}),
    ...(o && opts.name !== false ? { name: o.symbolic.startsWith('.') ? vb.oid : o.symbolic } : {}),
    type: vb.type,
    value: jsonValue(vb),
  };
  if (isHexShown(vb)) e.encoding = 'hex';
  if (!ix) return e;
  if (vb.type === 'ObjectIdentifier' && typeof vb.value === 'string') {
    const r = ix.toSymbolic(vb.value);
    if (r.node) e.label = r.symbolic;
    return e;
  }
  if (!node) return e;
  const base = node.syntax!.base;
  if (typeof vb.value === 'number' && INTEGER_BASES.has(base)) {
    const l = enumLabel(node, vb.value);
    if (l) e.label = l;
  } else if (base === 'BITS' && Buffer.isBuffer(vb.value)) e.bits = setBits(node, vb.value).map(([n]) => n);
  const d = hinted(node, vb);
  if (d !== undefined && d !== String(e.value)) e.display = d;
  return e;
}

// ---------------------------------------------------------------------------------------------
// net-snmp text form

/** net-snmp's uptime form of TimeTicks: `1 day, 2:03:04.05`, `0:00:01.23`. */
export function uptimeString(ticks: number): string {
  const cs = ticks % 100;
  let s = Math.floor(ticks / 100);
  const days = Math.floor(s / 86400);
  s %= 86400;
  const two = (n: number) => String(n).padStart(2, '0');
  const clock = `${Math.floor(s / 3600)}:${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}.${two(cs)}`;
  return days === 0 ? clock : `${days} day${days === 1 ? '' : 's'}, ${clock}`;
}

const hexBytes = (b: Buffer) => [...b].map((x) => x.toString(16).toUpperCase().padStart(2, '0')).join(' ');
const quoted = (b: Buffer) => `"${b.toString('latin1').replace(/(["\\])/g, '\\$1')}"`;

/** The value as `snmpwalk` prints it after ` = ` (`INTEGER: up(1)`, `STRING: "eth0"`, `Timeticks: (5) 0:00:00.05`). */
export function netSnmpValue(vb: VarBind, ix?: MibIndex): string {
  const node = ix ? objectOf(ix, vb.oid).node : undefined;
  const units = node?.units ? ` ${node.units}` : '';
  const v = vb.value;
  switch (vb.type) {
    case 'Integer32': {
      const n = v as number;
      const l = node ? enumLabel(node, n) : undefined;
      if (l) return `INTEGER: ${l}(${n})${units}`;
      return `INTEGER: ${hinted(node, vb) ?? n}${units}`;
    }
    case 'OctetString': {
      const buf = v as Buffer;
      if (node?.syntax?.base === 'BITS')
        return `BITS: ${hexBytes(buf)} ${setBits(node, buf)
          .map(([n, p]) => `${n}(${p})`)
          .join(' ')}`.trimEnd();
      const h = hinted(node, vb);
      if (h !== undefined) return `STRING: ${h}${units}`;
      if (!buf.length) return '""'; // net-snmp prints an empty string without its type
      return isPrintable(buf) ? `STRING: ${quoted(buf)}${units}` : `Hex-STRING: ${hexBytes(buf)}${units}`;
    }
    case 'ObjectIdentifier': {
      const r = ix?.toSymbolic(v as string);
      return `OID: ${r?.node ? r.symbolic : '.' + String(v)}`;
    }
    case 'IpAddress':
      return `IpAddress: ${String(v)}`;
    case 'Counter32':
      return `Counter32: ${String(v)}${units}`;
    case 'Gauge32':
      return `Gauge32: ${hinted(node, vb) ?? String(v)}${units}`;
    case 'TimeTicks':
      return `Timeticks: (${String(v)}) ${uptimeString(v as number)}`;
    case 'Counter64':
      return `Counter64: ${String(v)}${units}`;
    case 'Opaque':
      return `OPAQUE: ${hexBytes(v as Buffer)}`;
    case 'Null':
      return 'NULL';
    case 'NoSuchObject':
      return 'No Such Object available on this agent at this OID';
    case 'NoSuchInstance':
      return 'No Such Instance currently exists at this OID';
    case 'EndOfMibView':
      return 'No more variables left in this MIB View (It is past the end of the MIB tree)';
  }
}

/** One line as `snmpwalk -On` prints it, or with MIB names as `snmpwalk -Ob` (numeric indexes). */
export function netSnmpLine(vb: VarBind, ix?: MibIndex): string {
  const name = ix ? objectOf(ix, vb.oid).symbolic : '.' + vb.oid;
  return `${name} = ${netSnmpValue(vb, ix)}`;
}

// ---------------------------------------------------------------------------------------------
// Grouped view

export interface GroupedTable {
  oid: string;
  /** The conceptual row (`IF-MIB::ifEntry`). */
  entry: string;
  /** INDEX objects of the row, as the MIB names them. */
  index: string[];
  /** Column names in OID order (the ones the walk returned). */
  columns: string[];
  row_count: number;
  /** Keyed by the instance suffix (`3`, `127.0.0.1`), each row keyed by column name. */
  rows: Record<string, Record<string, unknown>>;
}

export interface Grouped {
  scalars: Record<string, unknown>;
  tables: Record<string, GroupedTable>;
  /** Varbinds the MIB does not place in a table or scalar, in walk order. */
  other: unknown[];
}

/**
 * A MIB browser's table view: columns of one table become rows keyed by index; scalars keyed by
 * `MODULE::name.0`; the rest (no MIB definition) listed as in the current format.
 */
export function groupVarBinds(vbs: VarBind[], ix: MibIndex, cell: (vb: VarBind, where: 'scalar' | 'cell' | 'other') => unknown): Grouped {
  const out: Grouped = { scalars: {}, tables: {}, other: [] };
  const columnSets = new Map<GroupedTable, Set<string>>();
  for (const vb of vbs) {
    const o = objectNode(ix, vb.oid);
    const n = o?.node;
    if (n && o.suffix && n.kind === 'scalar') {
      out.scalars[`${n.module}::${n.name}.${o.suffix}`] = cell(vb, 'scalar');
      continue;
    }
    if (n && o.suffix && n.kind === 'column') {
      const rowOid = parentOf(n.oid);
      const tableOid = parentOf(rowOid);
      const tnode = ix.definitions(tableOid)[0];
      const key = tnode ? `${tnode.module}::${tnode.name}` : tableOid;
      let t = out.tables[key];
      if (!t) {
        const rnode = ix.definitions(rowOid)[0];
        t = out.tables[key] = {
          oid: tableOid,
          entry: rnode ? `${rnode.module}::${rnode.name}` : rowOid,
          index: (rnode?.index ?? []).map((i) => i.name),
          columns: [],
          row_count: 0,
          rows: {},
        };
        columnSets.set(t, new Set());
      }
      const cols = columnSets.get(t)!;
      if (!cols.has(n.name)) {
        cols.add(n.name);
        t.columns.push(n.name);
      }
      let row = t.rows[o.suffix];
      if (!row) {
        row = t.rows[o.suffix] = {};
        t.row_count++;
      }
      row[n.name] = cell(vb, 'cell');
      continue;
    }
    out.other.push(cell(vb, 'other'));
  }
  return out;
}
