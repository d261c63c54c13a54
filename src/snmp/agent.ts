// Agent simulator: serves the default device (device.ts) plus custom overrides over UDP to
// v1/v2c communities and v3 USM users; GET, GETNEXT, GETBULK, SET (refused unless writable).
import type { RemoteInfo } from 'node:dgram';
import { defaultDevice, type DeviceOptions, type MibEntry } from './device.js';
import { decodeMessage, encodeCommunity, encodeV3, PduType, unwrapV3, USM_STATS, versionName, type AnyPdu, type Pdu, type V3Message } from './message.js';
import { engineBootsFrom, engineIdFrom, TIME_WINDOW_S, UdpService } from './udp.js';
import { localize, makeUser, type LocalUser, type UsmUser, type UsmUserConfig } from './usm.js';
import { compareOids, makeVarBind, oidParts, SnmpInputError, type SnmpType, type VarBind } from './values.js';

export interface OidOverride {
  oid: string;
  /** Any type name parseType accepts. */
  type: string;
  value: unknown;
}

export interface ActivityEntry {
  time: string;
  source: string;
  version: string;
  /** Community or v3 user name. */
  principal: string;
  request: string;
  oids: string[];
  varbinds: number;
  error?: string;
}

export interface AgentOptions {
  host?: string;
  /** UDP port; 0 picks a free one (see agent.port after start). */
  port?: number;
  community?: string;
  /** Community allowed to SET (none by default: the agent is read-only). */
  writeCommunity?: string;
  users?: UsmUserConfig[];
  /** Hex engine ID; a random net-snmp style one by default. */
  engineId?: string;
  /** snmpEngineBoots (default 1): the caller keeps it and adds one per start (RFC 3414 2.2.2). */
  engineBoots?: number;
  overrides?: OidOverride[];
  device?: DeviceOptions | false;
  /**
   * A table built once by `agentTable` and shared by many agents (a fleet): served instead of
   * `device`, without a copy per agent. Overrides and SET values still apply, on a private copy.
   */
  table?: AgentTable;
  /** Handed to value functions as their second argument: what differs between agents sharing a table. */
  context?: unknown;
  onActivity?: (entry: ActivityEntry) => void;
}

interface Row {
  oid: string;
  parts: number[];
  type: SnmpType;
  value: MibEntry['value'];
}

/** Rows sorted in OID order with their index: immutable, so agents can share one. */
export interface AgentTable {
  readonly rows: readonly Row[];
  readonly index: ReadonlyMap<string, number>;
}

/** Builds a shareable table from entries (a later entry for the same OID wins). */
export function agentTable(entries: Iterable<MibEntry | VarBind>): AgentTable {
  const byOid = new Map<string, Row>();
  for (const r of entries) byOid.set(r.oid, { oid: r.oid, type: r.type, value: r.value as MibEntry['value'], parts: oidParts(r.oid) });
  const rows = [...byOid.values()].sort((a, b) => compareOids(a.parts, b.parts));
  return { rows, index: new Map(rows.map((r, i) => [r.oid, i])) };
}

const REQUEST_NAMES: Record<number, string> = { 0xa0: 'get', 0xa1: 'getnext', 0xa3: 'set', 0xa5: 'getbulk' };
const MAX_RESPONSE = 65000;
/**
 * GETBULK builds at most this many varbinds: the fewest bytes a varbind can take (8) into the
 * largest response, so nothing that could fit is cut, while a request with thousands of
 * repeaters and max-repetitions 10000 cannot make the agent build millions of them.
 */
const MAX_BULK_VARBINDS = Math.floor(MAX_RESPONSE / 8);
/** Values a manager cannot SET: they only stand for exceptions in responses. */
const EXCEPTION_TYPES = new Set<SnmpType>(['Null', 'NoSuchObject', 'NoSuchInstance', 'EndOfMibView']);


export class SnmpAgent extends UdpService {
  private rows: readonly Row[] = [];
  private index: ReadonlyMap<string, number> = new Map<string, number>();
  private users = new Map<string, { user: UsmUser; local: LocalUser }>();
  readonly engineId: Buffer;
  readonly engineBoots: number;
  private writable = new Map<string, VarBind>();

  constructor(private opts: AgentOptions = {}) {
    super(() => this.opts, 161, 4 << 20);
    this.engineId = engineIdFrom(opts.engineId);
    this.engineBoots = engineBootsFrom(opts.engineBoots);
    for (const u of opts.users ?? []) {
      const user = makeUser(u);
      this.users.set(user.name, { user, local: localize(user, this.engineId) });
    }
    this.setOverrides(opts.overrides ?? []);
  }

  /** Replaces the custom overrides (they win over the device's values); validates every one first. */
  setOverrides(list: OidOverride[]): void {
    const checked = list.map((o, i) => {
      try {
        return makeVarBind(o.oid, o.type, o.value);
      } catch (e) {
        throw new SnmpInputError(`override ${i + 1}: ${(e as Error).message}`);
      }
    });
    // Kept: a SET rebuilds the table from opts.overrides and must not bring back older ones.
    this.opts.overrides = list;
    const shared = this.opts.table;
    if (shared && !checked.length && !this.writable.size) {
      this.rows = shared.rows;
      this.index = shared.index;
      return;
    }
    const base: Iterable<MibEntry> = shared ? shared.rows : this.opts.device === false ? [] : defaultDevice(this.opts.device ?? {});
    const t = agentTable([...base, ...checked, ...this.writable.values()]);
    this.rows = t.rows;
    this.index = t.index;
  }

  get size(): number {
    return this.rows.length;
  }

  private elapsed(): number {
    return (Date.now() - this.startedAt) / 1000;
  }

  private vb(i: number): VarBind {
    const r = this.rows[i]!;
    return { oid: r.oid, type: r.type, value: typeof r.value === 'function' ? r.value(this.elapsed(), this.opts.context) : r.value };
  }

  /** Index of the first row after the OID, or rows.length. */
  private after(oid: string): number {
    const hit = this.index.get(oid);
    if (hit !== undefined) return hit + 1;
    const p = oidParts(oid);
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareOids(this.rows[mid]!.parts, p) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private next(oid: string, v1: boolean): VarBind | undefined {
    let i = this.after(oid);
    // RFC 3584 4.2.2.1: a v1 manager never sees Counter64; skip to the next object.
    while (v1 && i < this.rows.length && this.rows[i]!.type === 'Counter64') i++;
    return i < this.rows.length ? this.vb(i) : undefined;
  }

  private process(pdu: Pdu, v1: boolean, canWrite: boolean): Pdu {
    const res: Pdu = { type: PduType.Response, requestId: pdu.requestId, errorStatus: 0, errorIndex: 0, varbinds: [] };
    const out = res.varbinds;
    const fail = (status: number, index: number): Pdu => ({ ...res, errorStatus: status, errorIndex: index, varbinds: pdu.varbinds });
    switch (pdu.type) {
      case PduType.Get:
        for (let k = 0; k < pdu.varbinds.length; k++) {
          const { oid } = pdu.varbinds[k]!;
          const i = this.index.get(oid);
          if (i !== undefined && !(v1 && this.rows[i]!.type === 'Counter64')) out.push(this.vb(i));
          else if (v1) return fail(2, k + 1);
          else out.push({ oid, type: this.hasObject(oid) ? 'NoSuchInstance' : 'NoSuchObject', value: null });
        }
        return res;
      case PduType.GetNext:
        for (let k = 0; k < pdu.varbinds.length; k++) {
          const { oid } = pdu.varbinds[k]!;
          const n = this.next(oid, v1);
          if (n) out.push(n);
          else if (v1) return fail(2, k + 1);
          else out.push({ oid, type: 'EndOfMibView', value: null });
        }
        return res;
      case PduType.GetBulk: {
        const nonRep = Math.max(0, Math.min(pdu.errorStatus, pdu.varbinds.length));
        const repeaters = pdu.varbinds.length - nonRep;
        const maxRep = Math.max(0, Math.min(pdu.errorIndex, 10000, repeaters ? Math.floor((MAX_BULK_VARBINDS - nonRep) / repeaters) : 0));
        for (let k = 0; k < nonRep; k++) out.push(this.next(pdu.varbinds[k]!.oid, false) ?? { oid: pdu.varbinds[k]!.oid, type: 'EndOfMibView', value: null });
        const reps = pdu.varbinds.slice(nonRep).map((v) => v.oid);
        if (reps.length === 1) {
          // The walk case: consecutive rows, no search after the first.
          let i = this.after(reps[0]!);
          for (let r = 0; r < maxRep; r++, i++) {
            if (i >= this.rows.length) {
              out.push({ oid: r ? out[out.length - 1]!.oid : reps[0]!, type: 'EndOfMibView', value: null });
              break;
            }
            out.push(this.vb(i));
          }
        } else {
          const cur = [...reps];
          for (let r = 0; r < maxRep && cur.length; r++) {
            let allEnd = true;
            for (let k = 0; k < cur.length; k++) {
              const n = this.next(cur[k]!, false);
              if (n) {
                allEnd = false;
                cur[k] = n.oid;
                out.push(n);
              } else out.push({ oid: cur[k]!, type: 'EndOfMibView', value: null });
            }
            if (allEnd) break;
          }
        }
        return res;
      }
      case PduType.Set:
        return this.set(pdu, v1, canWrite, res);
      default:
        return fail(5, 0);
    }
  }

  private hasObject(oid: string): boolean {
    // An object exists when some row lies under the OID minus its last arc (the instance).
    const parent = oid.slice(0, oid.lastIndexOf('.'));
    const i = this.after(parent);
    return i < this.rows.length && this.rows[i]!.oid.startsWith(parent + '.');
  }

  private set(pdu: Pdu, v1: boolean, canWrite: boolean, res: Pdu): Pdu {
    const fail = (v2: number, k: number): Pdu => ({ ...res, errorStatus: v1 ? (v2 === 7 || v2 === 10 ? 3 : 2) : v2, errorIndex: k + 1, varbinds: pdu.varbinds });
    for (let k = 0; k < pdu.varbinds.length; k++) {
      const vb = pdu.varbinds[k]!;
      if (!canWrite) return fail(6, k); // noAccess, as snmpd answers a read-only community (v1: noSuchName)
      const i = this.index.get(vb.oid);
      if (EXCEPTION_TYPES.has(vb.type) || (i !== undefined && this.rows[i]!.type !== vb.type)) return fail(7, k); // wrongType (v1: badValue)
      if (vb.type === 'Integer32' && ((vb.value as number) < -0x80000000 || (vb.value as number) > 0x7fffffff)) return fail(10, k); // wrongValue (v1: badValue)
    }
    for (const vb of pdu.varbinds) this.writable.set(vb.oid, vb);
    this.setOverrides(this.opts.overrides ?? []);
    return { ...res, varbinds: pdu.varbinds };
  }

  private log(rinfo: RemoteInfo, version: string, principal: string, pdu: AnyPdu | undefined, error?: string): void {
    if (!this.opts.onActivity) return;
    this.opts.onActivity({
      time: new Date().toISOString(),
      source: `${rinfo.address}:${rinfo.port}`,
      version,
      principal,
      request: pdu ? (REQUEST_NAMES[pdu.type] ?? 'unknown') : 'unknown',
      oids: pdu ? pdu.varbinds.slice(0, 10).map((v) => v.oid) : [],
      varbinds: pdu?.varbinds.length ?? 0,
      ...(error ? { error } : {}),
    });
  }

  protected onMessage(buf: Buffer, rinfo: RemoteInfo): void {
    let m;
    try {
      m = decodeMessage(buf);
    } catch (e) {
      this.log(rinfo, '?', '', undefined, `malformed message: ${(e as Error).message}`);
      return;
    }
    if (m.version !== 3) {
      const community = m.community.toString('utf8');
      const canWrite = !!this.opts.writeCommunity && community === this.opts.writeCommunity;
      if (!canWrite && community !== (this.opts.community ?? 'public')) {
        this.log(rinfo, versionName(m.version), community, m.pdu, 'unknown community');
        return;
      }
      const pdu = m.pdu as Pdu;
      const refused = unsupported(pdu, m.version === 0);
      if (refused) return this.log(rinfo, versionName(m.version), community, pdu, refused);
      const res = this.fit(pdu.type, this.process(pdu, m.version === 0, canWrite), MAX_RESPONSE, (p) => encodeCommunity(m.version as 0 | 1, m.community, p));
      this.send(res, rinfo);
      this.log(rinfo, versionName(m.version), community, pdu);
      return;
    }
    this.onV3(m as V3Message, rinfo);
  }

  private report(m: V3Message, rinfo: RemoteInfo, oid: string, local: LocalUser | null, why: string): void {
    // RFC 3412 7.1: no report unless the message asked for one (reportable flag).
    if (!(m.flags & 4)) return this.log(rinfo, '3', m.userName, undefined, why);
    const counter: VarBind = { oid, type: 'Counter32', value: 1 };
    const pdu: Pdu = { type: PduType.Report, requestId: m.msgId, errorStatus: 0, errorIndex: 0, varbinds: [counter] };
    // A report about time is authenticated (no privacy) so the manager can trust the new time.
    const authOnly: LocalUser | null = local?.auth ? { name: local.name, auth: local.auth } : null;
    this.send(encodeV3(this.header(m, m.userName), authOnly, pdu), rinfo);
    this.log(rinfo, '3', m.userName, undefined, why);
  }

  private header(m: V3Message, userName: string) {
    return { msgId: m.msgId, maxSize: 65507, reportable: false, engineId: this.engineId, boots: this.engineBoots, time: Math.floor(this.elapsed()), userName, contextEngineId: this.engineId, contextName: m.contextName };
  }

  private onV3(m: V3Message, rinfo: RemoteInfo): void {
    // RFC 3412 7.2: USM is the only security model here; no manager may ask for less than 484 bytes.
    if (m.securityModel !== 3) return this.log(rinfo, '3', m.userName, undefined, `unknown security model ${m.securityModel}`);
    if (m.maxSize < 484) return this.log(rinfo, '3', m.userName, undefined, `msgMaxSize ${m.maxSize} below 484`);
    if (!m.engineId.equals(this.engineId)) return this.report(m, rinfo, USM_STATS.unknownEngineIDs, null, 'engine discovery');
    const entry = this.users.get(m.userName);
    if (!entry) return this.report(m, rinfo, USM_STATS.unknownUserNames, null, `unknown user ${m.userName}`);
    const res = unwrapV3(m, entry.local);
    if ('error' in res) {
      const oid = res.error === 'wrongDigest' ? USM_STATS.wrongDigests : res.error === 'decryptionError' ? USM_STATS.decryptionErrors : USM_STATS.unsupportedSecLevels;
      return this.report(m, rinfo, oid, null, res.error);
    }
    if (m.flags & 1 && (m.boots !== this.engineBoots || Math.abs(m.time - this.elapsed()) > TIME_WINDOW_S)) return this.report(m, rinfo, USM_STATS.notInTimeWindows, entry.local, 'time sync');
    const pdu = res.pdu as Pdu;
    const refused = unsupported(pdu, false);
    if (refused) return this.log(rinfo, '3', m.userName, pdu, refused);
    const level: LocalUser | null = m.flags & 1 ? (m.flags & 2 ? entry.local : { name: entry.local.name, auth: entry.local.auth }) : null;
    const out = this.fit(pdu.type, this.process(pdu, false, false), Math.min(m.maxSize, MAX_RESPONSE), (p) => encodeV3(this.header(m, m.userName), level, { ...p, requestId: pdu.requestId }));
    this.send(out, rinfo);
    this.log(rinfo, '3', m.userName, pdu);
  }

  /**
   * Encodes the response within `max` bytes. A GETBULK answer may drop trailing varbinds until it
   * fits (cut in proportion to the excess, so a few encodings do; at least one stays); any other
   * answer, and a GETBULK whose first varbind does not fit, is tooBig (RFC 3416 4.2.1, 4.2.3).
   */
  private fit(request: number, res: Pdu, max: number, encode: (p: Pdu) => Buffer): Buffer {
    let msg = encode(res);
    while (request === PduType.GetBulk && msg.length > max && res.varbinds.length > 1) {
      res.varbinds.length = Math.max(1, Math.min(res.varbinds.length - 1, Math.floor((res.varbinds.length * max * 0.95) / msg.length)));
      msg = encode(res);
    }
    return msg.length > max ? encode({ ...res, errorStatus: 1, errorIndex: 0, varbinds: [] }) : msg;
  }

  protected override onHandlerError(e: unknown, rinfo: RemoteInfo): void {
    this.log(rinfo, '?', '', undefined, `internal error: ${(e as Error).message}`);
  }

  private send(msg: Buffer, rinfo: RemoteInfo): void {
    this.socket?.send(msg, rinfo.port, rinfo.address);
  }
}

/** Why a PDU is not served (logged and counted as an error), or undefined for a request. */
function unsupported(pdu: AnyPdu, v1: boolean): string | undefined {
  if (!(pdu.type in REQUEST_NAMES)) return `unsupported PDU type 0x${pdu.type.toString(16)} (an agent answers get, getnext, getbulk and set)`;
  if (v1 && pdu.type === PduType.GetBulk) return 'GETBULK is not part of SNMPv1';
  return undefined;
}
