// The console's walker (POST /api/walk/execute) and the value formatting it shares with the trap
// receiver: parsed JSON varbinds, net-snmp style text lines (`snmpwalk -On`, or with MIB names as
// `snmpwalk -Ob` prints them), MIB names, enum labels and DISPLAY-HINTs, and the grouped
// (table/scalar) view. Decisions where doc 1 says "not shown": docs/console.md (Walker).
import { lookup } from 'node:dns/promises';
import { ApiError } from '../api/deps.js';
import { OidSyntaxError, type MibIndex, type MibNode } from '../mib/mib-index.js';
import type { SnmpVersion } from '../snmp/message.js';
import { makeUser, type UsmUserConfig } from '../snmp/usm.js';
import { isHexShown, isPrintable, jsonValue, parseOid, SnmpInputError, SnmpResponseError, SnmpTimeoutError, type VarBind } from '../snmp/values.js';
import { walk } from '../snmp/walker.js';
import type { ServiceContext } from './deps.js';

/** Walks running at once; more are 429 (each holds a socket and up to walk_max_oids varbinds). */
export const MAX_CONCURRENT_WALKS = 4;
/** A host name that does not resolve within this is a 400, not a hang. */
export const DNS_TIMEOUT_MS = 5000;
export const DEFAULT_WALK_OID = '1.3.6.1.2.1';

export interface SnmpV3Fields {
  username?: string;
  auth_protocol?: string;
  auth_key?: string;
  priv_protocol?: string;
  priv_key?: string;
  context_name?: string;
}

export interface WalkRequest extends SnmpV3Fields {
  target: string;
  port?: number;
  community?: string;
  oid?: string;
  parse?: boolean;
  use_mibs?: boolean;
  json_format?: 'current' | 'grouped';
  version?: SnmpVersion;
  max_repetitions?: number;
  timeout_ms?: number;
  retries?: number;
  max_oids?: number;
}

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
      if (node?.syntax?.base === 'BITS') return `BITS: ${hexBytes(buf)} ${setBits(node, buf).map(([n, p]) => `${n}(${p})`).join(' ')}`.trimEnd();
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
        t = out.tables[key] = { oid: tableOid, entry: rnode ? `${rnode.module}::${rnode.name}` : rowOid, index: (rnode?.index ?? []).map((i) => i.name), columns: [], row_count: 0, rows: {} };
        columnSets.set(t, new Set());
      }
      const cols = columnSets.get(t)!;
      if (!cols.has(n.name)) cols.add(n.name), t.columns.push(n.name);
      let row = t.rows[o.suffix];
      if (!row) (row = t.rows[o.suffix] = {}), t.row_count++;
      row[n.name] = cell(vb, 'cell');
      continue;
    }
    out.other.push(cell(vb, 'other'));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Input

/**
 * A numeric OID from input that may be numeric or a MIB name (`IF-MIB::ifTable`, `ifDescr.3`,
 * `sysDescr.0`); 422 naming `what` when it is neither.
 */
export function resolveOidInput(text: string, ix: MibIndex | undefined, what: string): string {
  const s = String(text).trim();
  if (/^\.?\d+(\.\d+)*$/.test(s)) {
    try {
      return parseOid(s, what, true);
    } catch (e) {
      throw new ApiError(422, (e as Error).message);
    }
  }
  let r;
  try {
    r = ix?.toNumeric(s);
  } catch (e) {
    if (e instanceof OidSyntaxError) throw new ApiError(422, `${what} "${text}": ${e.message}`);
    throw e;
  }
  if (!r) throw new ApiError(422, `${what} "${text}" is neither a numeric OID nor a name known to the loaded MIBs (GET /api/mibs/browse/search finds names)`);
  return r.oid;
}

/** The USM user of a v3 request; 422 when fields are missing or wrong. */
export function v3User(req: SnmpV3Fields, version: SnmpVersion): UsmUserConfig | undefined {
  if (version !== '3') {
    if (req.username) throw new ApiError(422, `username is for SNMPv3; set version "3" (or leave username out for ${version === '1' ? 'SNMPv1' : 'SNMPv2c'})`);
    return undefined;
  }
  if (!req.username) throw new ApiError(422, 'SNMPv3 needs username (and auth_protocol/auth_key, priv_protocol/priv_key for authNoPriv/authPriv)');
  const cfg: UsmUserConfig = { name: req.username, authProtocol: req.auth_protocol, authKey: req.auth_key, privProtocol: req.priv_protocol, privKey: req.priv_key };
  try {
    makeUser(cfg);
  } catch (e) {
    throw new ApiError(422, (e as Error).message);
  }
  return cfg;
}

/** The address of a host; 400 when it does not resolve (within DNS_TIMEOUT_MS). */
export async function resolveHost(host: string): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const r = await Promise.race([
      lookup(host),
      new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`no DNS answer within ${DNS_TIMEOUT_MS} ms`)), DNS_TIMEOUT_MS))),
    ]);
    return r.address;
  } catch (e) {
    throw new ApiError(400, `cannot resolve host "${host}" (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); give an IP address or a resolvable name`);
  } finally {
    clearTimeout(timer);
  }
}

const UNREACHABLE = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EPERM', 'EACCES', 'ENETDOWN', 'EHOSTDOWN']);

/**
 * The API error for a failed exchange with an agent or trap receiver: 504 no answer (naming host,
 * port, timeout and retries), 502 unreachable or an error/report from the peer.
 */
export function peerError(e: unknown, where: { host: string; port: number; version: SnmpVersion; timeoutMs: number; retries: number; what: string }): Error {
  const at = `${where.host}:${where.port}`;
  const creds = where.version === '3' ? 'the SNMPv3 user name, protocols and keys are right' : 'the community string is right';
  if (e instanceof SnmpTimeoutError) {
    if (/port unreachable/.test(e.message)) return new ApiError(502, `nothing listens on udp ${at} (ICMP port unreachable); check the host and port`);
    return new ApiError(504, `no response from ${at} (SNMPv${where.version}) within ${where.timeoutMs} ms per attempt, ${where.retries + 1} attempts (timeout_ms ${where.timeoutMs}, retries ${where.retries}); check that ${where.what} runs there, that UDP is not filtered and that ${creds}`);
  }
  if (e instanceof SnmpResponseError) {
    const hint = /refused the request/.test(e.message) ? `; check that ${creds}` : '';
    return new ApiError(502, `${e.message}${hint}`);
  }
  if (e instanceof SnmpInputError) return new ApiError(e.statusCode === 400 ? 422 : e.statusCode, e.message);
  const code = (e as NodeJS.ErrnoException).code;
  if (code && UNREACHABLE.has(code)) return new ApiError(502, `cannot reach udp ${at}: ${code}`);
  return e as Error;
}

// ---------------------------------------------------------------------------------------------
// The walk

export interface WalkResult {
  target: string;
  port: number;
  version: SnmpVersion;
  oid: string;
  oid_name?: string;
  operation: 'GETBULK' | 'GETNEXT';
  max_repetitions?: number;
  format: 'current' | 'grouped';
  parse: boolean;
  use_mibs: boolean;
  count: number;
  truncated: boolean;
  max_oids: number;
  duration_ms: number;
  results?: unknown[];
  scalars?: Grouped['scalars'];
  tables?: Grouped['tables'];
  other?: Grouped['other'];
}

export class Walker {
  private running = 0;

  constructor(private readonly ctx: ServiceContext) {}

  async execute(req: WalkRequest): Promise<WalkResult> {
    const { ctx } = this;
    const app = ctx.appSettings.get();
    const version = req.version ?? '2c';
    const port = req.port ?? 161;
    const parse = req.parse ?? true;
    const useMibs = req.use_mibs ?? false;
    const format = req.json_format ?? 'current';
    const timeoutMs = req.timeout_ms ?? app.walk_timeout_ms;
    const retries = req.retries ?? app.walk_retries;
    const maxRep = req.max_repetitions ?? app.walk_max_repetitions;
    const maxOids = Math.min(req.max_oids ?? app.walk_max_oids, app.walk_max_oids);
    const ix = useMibs || format === 'grouped' || !/^\.?[\d.]+$/.test(req.oid ?? '1') ? ctx.mibs.index() : undefined;
    const oid = resolveOidInput(req.oid ?? DEFAULT_WALK_OID, ix, 'oid');
    const user = v3User(req, version);
    if (this.running >= MAX_CONCURRENT_WALKS) throw new ApiError(429, `${MAX_CONCURRENT_WALKS} walks are already running; try again when one finishes`);
    this.running++;
    const started = performance.now();
    let vbs: VarBind[];
    try {
      const host = await resolveHost(req.target);
      ctx.stats.inc('walker', 'walks');
      // One more than the cap tells a truncated walk from one that ended exactly at the cap.
      vbs = await walk({ host, port, version, community: req.community ?? 'public', ...(user ? { user } : {}), contextName: req.context_name, timeoutMs, retries, oid, maxRepetitions: maxRep, maxOids: maxOids + 1 }).catch((e: unknown) => {
        ctx.stats.inc('walker', 'errors');
        throw peerError(e, { host: req.target, port, version, timeoutMs, retries, what: 'an SNMP agent' });
      });
    } finally {
      this.running--;
      ctx.stats.set('walker', 'last_duration_ms', Math.round(performance.now() - started));
    }
    const truncated = vbs.length > maxOids;
    if (truncated) vbs.length = maxOids;
    ctx.stats.inc('walker', 'oids', vbs.length);
    const names = useMibs ? ix : undefined;
    const res: WalkResult = {
      target: req.target,
      port,
      version,
      oid,
      ...(names ? { oid_name: names.toSymbolic(oid).symbolic } : {}),
      operation: version === '1' ? 'GETNEXT' : 'GETBULK',
      ...(version === '1' ? {} : { max_repetitions: maxRep }),
      format,
      parse,
      use_mibs: useMibs,
      count: vbs.length,
      truncated,
      max_oids: maxOids,
      duration_ms: 0,
    };
    if (format === 'grouped') {
      // Scalars and rows are keyed by name already; `other` entries keep their OID (and name).
      const cell = parse
        ? (vb: VarBind, where: string) => describeVarBind(vb, names, { oid: where !== 'cell', name: where === 'other' })
        : (vb: VarBind, where: string) => (where === 'other' ? netSnmpLine(vb, names) : netSnmpValue(vb, names));
      Object.assign(res, groupVarBinds(vbs, ix!, cell));
    } else res.results = parse ? vbs.map((vb) => describeVarBind(vb, names)) : vbs.map((vb) => netSnmpLine(vb, names));
    res.duration_ms = Math.round(performance.now() - started);
    return res;
  }
}
