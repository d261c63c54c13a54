// Agent simulator: serves the default device (device.ts) plus custom overrides over UDP to
// v1/v2c communities and v3 USM users; GET, GETNEXT, GETBULK, SET (refused unless writable).
import type { RemoteInfo } from 'node:dgram';
import { agentTable, rowAfter, VarBindBody, type AgentTable } from './agent-table.js';
import { defaultDevice, type DeviceOptions, type MibEntry } from './device.js';
import {
  decodeMessage,
  encodeCommunity,
  encodeV3,
  PduType,
  unwrapV3,
  USM_STATS,
  versionName,
  type AnyPdu,
  type EncodedPdu,
  type Pdu,
  type V3Message,
} from './message.js';
import { engineBootsFrom, engineIdFrom, TIME_WINDOW_S, UdpService } from './udp.js';
import { localize, makeUser, type LocalUser, type UsmUser, type UsmUserConfig } from './usm.js';
import { makeVarBind, SnmpInputError, type SnmpType, type VarBind } from './values.js';

export { agentTable, type AgentTable } from './agent-table.js';

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
  /** Caps of a GETBULK answer (default DEFAULT_BULK_LIMITS). */
  bulk?: BulkLimits;
}

/**
 * What one GETBULK may make the agent send. A 41-byte request with max-repetitions 10000 used to be
 * answered with 10 KB: a reflector toward any spoofed source address.
 */
export interface BulkLimits {
  /**
   * Repeated varbinds in one answer, as snmpd's maxGetbulkResponses (default 100 there too):
   * max-repetitions is cut to this divided by the number of repeaters.
   */
  maxVarbinds: number;
  /**
   * Largest answer as a multiple of the request's size: trailing varbinds are dropped until it
   * fits (the first one always stays, as a GET of it would answer it too).
   */
  maxAmplification: number;
}

export const DEFAULT_BULK_LIMITS: Readonly<BulkLimits> = { maxVarbinds: 100, maxAmplification: 16 };

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
/** Every answer's varbinds are written here (see VarBindBody). */
const body = new VarBindBody();
/** An answer's PDU fields; its varbinds are in `body`. */
type Answer = Omit<EncodedPdu, 'body' | 'type'>;

export class SnmpAgent extends UdpService {
  private table!: AgentTable;
  private users = new Map<string, { user: UsmUser; local: LocalUser }>();
  readonly engineId: Buffer;
  readonly engineBoots: number;
  private writable = new Map<string, VarBind>();
  /** The communities as bytes, compared with the request's without decoding it. */
  private readonly readCommunity: Buffer;
  private readonly writeCommunity: Buffer | undefined;
  private readonly bulk: BulkLimits;

  constructor(private opts: AgentOptions = {}) {
    super(() => this.opts, 161, 4 << 20);
    this.engineId = engineIdFrom(opts.engineId);
    this.engineBoots = engineBootsFrom(opts.engineBoots);
    this.readCommunity = Buffer.from(opts.community ?? 'public');
    this.writeCommunity = opts.writeCommunity ? Buffer.from(opts.writeCommunity) : undefined;
    this.bulk = opts.bulk ?? DEFAULT_BULK_LIMITS;
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
      this.table = shared;
      return;
    }
    const base: Iterable<MibEntry> = shared ? shared.rows : this.opts.device === false ? [] : defaultDevice(this.opts.device ?? {});
    this.table = agentTable([...base, ...checked, ...this.writable.values()]);
  }

  get size(): number {
    return this.table.rows.length;
  }

  private elapsed(): number {
    return (Date.now() - this.startedAt) / 1000;
  }

  /** Index of the next row after the OID; a v1 manager never sees Counter64 (RFC 3584 4.2.2.1: skipped). */
  private next(oid: string, v1: boolean): number {
    const rows = this.table.rows;
    let i = rowAfter(this.table, oid);
    while (v1 && i < rows.length && rows[i]!.type === 'Counter64') i++;
    return i;
  }

  /** Writes the answer's varbinds into `body`; returns its error status and index. */
  private process(pdu: Pdu, v1: boolean, canWrite: boolean): Answer {
    const t = this.table;
    const n = t.rows.length;
    // One clock reading per request: every moving value of an answer is as of the same instant.
    const elapsed = this.elapsed();
    const ctx = this.opts.context;
    const ok: Answer = { requestId: pdu.requestId, errorStatus: 0, errorIndex: 0 };
    body.reset();
    switch (pdu.type) {
      case PduType.Get:
        for (let k = 0; k < pdu.varbinds.length; k++) {
          const { oid } = pdu.varbinds[k]!;
          const i = t.index.get(oid);
          if (i !== undefined && !(v1 && t.rows[i]!.type === 'Counter64')) body.rows(t, i, i + 1, elapsed, ctx);
          else if (v1) return this.echo(pdu, 2, k + 1);
          else body.exception(oid, this.hasObject(oid) ? 'NoSuchInstance' : 'NoSuchObject');
        }
        return ok;
      case PduType.GetNext:
        for (let k = 0; k < pdu.varbinds.length; k++) {
          const { oid } = pdu.varbinds[k]!;
          const i = this.next(oid, v1);
          if (i < n) body.rows(t, i, i + 1, elapsed, ctx);
          else if (v1) return this.echo(pdu, 2, k + 1);
          else body.exception(oid, 'EndOfMibView');
        }
        return ok;
      case PduType.GetBulk: {
        const nonRep = Math.max(0, Math.min(pdu.errorStatus, pdu.varbinds.length));
        const repeaters = pdu.varbinds.length - nonRep;
        const maxRep = Math.max(
          0,
          Math.min(pdu.errorIndex, repeaters ? Math.floor(Math.min(this.bulk.maxVarbinds, MAX_BULK_VARBINDS - nonRep) / repeaters) : 0),
        );
        for (let k = 0; k < nonRep; k++) {
          const i = this.next(pdu.varbinds[k]!.oid, false);
          if (i < n) body.rows(t, i, i + 1, elapsed, ctx);
          else body.exception(pdu.varbinds[k]!.oid, 'EndOfMibView');
        }
        if (repeaters === 1) {
          // The walk case: consecutive rows, one search for the first.
          const oid = pdu.varbinds[nonRep]!.oid;
          const i = this.next(oid, false);
          const end = Math.min(n, i + maxRep);
          body.rows(t, i, end, elapsed, ctx);
          if (end - i < maxRep) body.exception(end > i ? t.rows[end - 1]!.oid : oid, 'EndOfMibView');
          return ok;
        }
        // Per repeater: the next row's index and the OID an endOfMibView repeats.
        const at = pdu.varbinds.slice(nonRep).map((v) => this.next(v.oid, false));
        const last = pdu.varbinds.slice(nonRep).map((v) => v.oid);
        // Rows past what any response can carry would only be cut again (fit).
        for (let r = 0; r < maxRep && body.length <= MAX_RESPONSE; r++) {
          let allEnd = true;
          for (let k = 0; k < repeaters; k++) {
            const i = at[k]!;
            if (i < n) {
              allEnd = false;
              body.rows(t, i, i + 1, elapsed, ctx);
              last[k] = t.rows[i]!.oid;
              at[k] = i + 1;
            } else body.exception(last[k]!, 'EndOfMibView');
          }
          if (allEnd) break;
        }
        return ok;
      }
      case PduType.Set:
        return this.set(pdu, v1, canWrite);
      default:
        return this.echo(pdu, 5, 0);
    }
  }

  /** An answer that repeats the request's varbinds: an error (status and index), or a SET done. */
  private echo(pdu: Pdu, errorStatus: number, errorIndex: number): Answer {
    body.reset();
    for (const vb of pdu.varbinds) body.varbind(vb);
    return { requestId: pdu.requestId, errorStatus, errorIndex };
  }

  private hasObject(oid: string): boolean {
    // An object exists when some row lies under the OID minus its last arc (the instance).
    const parent = oid.slice(0, oid.lastIndexOf('.'));
    const i = rowAfter(this.table, parent);
    return i < this.table.rows.length && this.table.rows[i]!.oid.startsWith(parent + '.');
  }

  private set(pdu: Pdu, v1: boolean, canWrite: boolean): Answer {
    const fail = (v2: number, k: number): Answer => this.echo(pdu, v1 ? (v2 === 7 || v2 === 10 ? 3 : 2) : v2, k + 1);
    const t = this.table;
    for (let k = 0; k < pdu.varbinds.length; k++) {
      const vb = pdu.varbinds[k]!;
      if (!canWrite) return fail(6, k); // noAccess, as snmpd answers a read-only community (v1: noSuchName)
      const i = t.index.get(vb.oid);
      if (EXCEPTION_TYPES.has(vb.type) || (i !== undefined && t.rows[i]!.type !== vb.type)) return fail(7, k); // wrongType (v1: badValue)
      if (vb.type === 'Integer32' && ((vb.value as number) < -0x80000000 || (vb.value as number) > 0x7fffffff)) return fail(10, k); // wrongValue (v1: badValue)
    }
    for (const vb of pdu.varbinds) this.writable.set(vb.oid, vb);
    this.setOverrides(this.opts.overrides ?? []);
    return this.echo(pdu, 0, 0);
  }

  /** `principal`: the user name, or the community's bytes (decoded only when there is a listener). */
  private log(rinfo: RemoteInfo, version: string, principal: string | Buffer, pdu: AnyPdu | undefined, error?: string): void {
    if (!this.opts.onActivity) return;
    this.opts.onActivity({
      time: new Date().toISOString(),
      source: `${rinfo.address}:${rinfo.port}`,
      version,
      principal: typeof principal === 'string' ? principal : principal.toString('utf8'),
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
      const community = m.community;
      const canWrite = !!this.writeCommunity && community.equals(this.writeCommunity);
      if (!canWrite && !community.equals(this.readCommunity)) {
        this.log(rinfo, versionName(m.version), community, m.pdu, 'unknown community');
        return;
      }
      const pdu = m.pdu as Pdu;
      const refused = unsupported(pdu, m.version === 0);
      if (refused) return this.log(rinfo, versionName(m.version), community, pdu, refused);
      const res = this.fit(pdu.type, this.process(pdu, m.version === 0, canWrite), MAX_RESPONSE, buf.length, (p) =>
        encodeCommunity(m.version as 0 | 1, community, p),
      );
      this.send(res, rinfo);
      this.log(rinfo, versionName(m.version), community, pdu);
      return;
    }
    this.onV3(m as V3Message, rinfo, buf.length);
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
    return {
      msgId: m.msgId,
      maxSize: 65507,
      reportable: false,
      engineId: this.engineId,
      boots: this.engineBoots,
      time: Math.floor(this.elapsed()),
      userName,
      contextEngineId: this.engineId,
      contextName: m.contextName,
    };
  }

  private onV3(m: V3Message, rinfo: RemoteInfo, requestBytes: number): void {
    // RFC 3412 7.2: USM is the only security model here; no manager may ask for less than 484 bytes.
    if (m.securityModel !== 3) return this.log(rinfo, '3', m.userName, undefined, `unknown security model ${m.securityModel}`);
    if (m.maxSize < 484) return this.log(rinfo, '3', m.userName, undefined, `msgMaxSize ${m.maxSize} below 484`);
    if (!m.engineId.equals(this.engineId)) return this.report(m, rinfo, USM_STATS.unknownEngineIDs, null, 'engine discovery');
    const entry = this.users.get(m.userName);
    if (!entry) return this.report(m, rinfo, USM_STATS.unknownUserNames, null, `unknown user ${m.userName}`);
    const res = unwrapV3(m, entry.local);
    if ('error' in res) {
      const oid =
        res.error === 'wrongDigest' ? USM_STATS.wrongDigests : res.error === 'decryptionError' ? USM_STATS.decryptionErrors : USM_STATS.unsupportedSecLevels;
      return this.report(m, rinfo, oid, null, res.error);
    }
    if (m.flags & 1 && (m.boots !== this.engineBoots || Math.abs(m.time - this.elapsed()) > TIME_WINDOW_S))
      return this.report(m, rinfo, USM_STATS.notInTimeWindows, entry.local, 'time sync');
    const pdu = res.pdu as Pdu;
    const refused = unsupported(pdu, false);
    if (refused) return this.log(rinfo, '3', m.userName, pdu, refused);
    const level: LocalUser | null = m.flags & 1 ? (m.flags & 2 ? entry.local : { name: entry.local.name, auth: entry.local.auth }) : null;
    const out = this.fit(pdu.type, this.process(pdu, false, false), Math.min(m.maxSize, MAX_RESPONSE), requestBytes, (p) =>
      encodeV3(this.header(m, m.userName), level, p),
    );
    this.send(out, rinfo);
    this.log(rinfo, '3', m.userName, pdu);
  }

  /**
   * Encodes the answer (its varbinds in `body`) within `max` bytes. A GETBULK answer drops
   * trailing varbinds until it fits, and until it is at most maxAmplification times the request's
   * `requestBytes` (at least one varbind stays); any other answer, and a GETBULK whose first
   * varbind does not fit `max`, is tooBig (RFC 3416 4.2.1, 4.2.3).
   */
  private fit(request: number, a: Answer, max: number, requestBytes: number, encode: (p: EncodedPdu) => Buffer): Buffer {
    const pdu = (count: number): EncodedPdu => ({ type: PduType.Response, ...a, body: body.bytes(count) });
    const limit = Math.min(max, requestBytes * this.bulk.maxAmplification);
    let k = body.count;
    let msg = encode(pdu(k));
    while (request === PduType.GetBulk && msg.length > limit && k > 1) {
      // The bytes around the varbinds barely change (length octets, cipher padding): keep the most
      // varbinds that fit beside them, and check again.
      const room = limit - (msg.length - body.ends[k - 1]!);
      let j = k - 1;
      while (j > 1 && body.ends[j - 1]! > room) j--;
      k = j;
      msg = encode(pdu(k));
    }
    return msg.length > max ? encode({ ...pdu(0), errorStatus: 1, errorIndex: 0 }) : msg;
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
