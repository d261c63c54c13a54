// Trap receiver: v1 and v2c traps, v2c informs (acknowledged), v3 traps and informs from many
// USM users at once. For a v3 trap the sender is the authoritative engine, so each user's keys
// are localised per sender engine ID (cached in usm.ts); for an inform the receiver is
// authoritative and answers discovery probes with its own engine ID.
import type { RemoteInfo } from 'node:dgram';
import { engineBootsFrom, engineIdFrom, TIME_WINDOW_S, UdpService } from './udp.js';
import {
  decodeMessage,
  encodeCommunity,
  encodeV3,
  macMatches,
  PduType,
  unwrapV3,
  USM_STATS,
  type AnyPdu,
  type Pdu,
  type TrapV1Fields,
  type V3Message,
} from './message.js';
import { localize, makeUser, NotificationReplayGuard, type LocalUser, type UsmUser, type UsmUserConfig } from './usm.js';
import type { VarBind } from './values.js';

export interface TrapEvent {
  time: string;
  /** Sender as address:port. */
  source: string;
  version: '1' | '2c' | '3';
  kind: 'trap' | 'inform';
  community?: string;
  user?: string;
  /** v3: the authoritative engine ID in hex (the sender's for traps, ours for informs). */
  engineId?: string;
  trapOid: string;
  /** sysUpTime.0 of the notification (v1: the timestamp field), in hundredths of a second. */
  uptime?: number;
  /** The notification's varbinds without sysUpTime.0 and snmpTrapOID.0. */
  varbinds: VarBind[];
  /** v1 only. */
  v1?: { enterprise: string; agentAddr: string; genericTrap: number; specificTrap: number };
}

export interface ReceiverUserConfig extends UsmUserConfig {
  /** Hex engine ID this user's keys belong to (snmptrapd's createUser -e); any engine when absent. */
  engineId?: string;
}

export interface TrapReceiverOptions {
  host?: string;
  port?: number;
  /** Accepted v1/v2c community; any community when undefined. */
  community?: string;
  users?: ReceiverUserConfig[];
  /** Our engine ID for informs (hex); random when absent. */
  engineId?: string;
  /**
   * Our snmpEngineBoots for informs (default 1). With a persisted engineId, pass a value that
   * grows on every start: with the same boots, informs captured before a restart fall back into
   * the time window once our engine time reaches theirs again.
   */
  engineBoots?: number;
  onTrap(event: TrapEvent): void;
  /** Dropped messages (bad community, unknown user, wrong digest, malformed, replays), with the reason; `kind` tells replays apart. */
  onDrop?(reason: string, source: string, kind: DropKind): void;
  /** Authenticated v3 notifications remembered to recognise replays (default 100000; NotificationReplayGuard). */
  replayCacheSize?: number;
}

/** `replay`: an authenticated v3 notification received already; `notInTimeWindow`: RFC 3414 3.2 step 7. */
export type DropKind = 'replay' | 'notInTimeWindow' | 'other';

const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';
const SNMP_TRAP_OID = '1.3.6.1.6.3.1.1.4.1.0';
const SNMP_TRAPS = '1.3.6.1.6.3.1.1.5';

/** A receiver user: its keys, and the same user without privacy to check a MAC before deriving the privacy key. */
interface RxUser {
  user: UsmUser;
  authOnly: UsmUser | undefined;
  /** msgFlags & 3 this user sends with at most: 0 noAuthNoPriv, 1 authNoPriv, 3 authPriv. */
  level: number;
}

/** RFC 3584 3.1: the v2 notification OID of a v1 trap. */
export function v1TrapOid(t: TrapV1Fields): string {
  return t.genericTrap < 6 ? `${SNMP_TRAPS}.${t.genericTrap + 1}` : `${t.enterprise}.0.${t.specificTrap}`;
}

export class TrapReceiver extends UdpService {
  private users = new Map<string, { any?: RxUser; byEngine: Map<string, RxUser> }>();
  readonly engineId: Buffer;
  readonly engineBoots: number;
  received = 0;
  dropped = 0;
  /** Of `dropped`: replays of an authenticated v3 notification, and v3 traps outside the sender's time window. */
  replays = 0;
  notInTimeWindows = 0;
  private readonly timeliness: NotificationReplayGuard;

  constructor(private opts: TrapReceiverOptions) {
    super(() => this.opts, 162, 8 << 20);
    this.timeliness = new NotificationReplayGuard(TIME_WINDOW_S, opts.replayCacheSize);
    this.engineId = engineIdFrom(opts.engineId);
    this.engineBoots = engineBootsFrom(opts.engineBoots);
    for (const u of opts.users ?? []) this.addUser(u);
  }

  addUser(cfg: ReceiverUserConfig): void {
    const made = makeUser(cfg);
    const user: RxUser = {
      user: made,
      authOnly: made.auth && made.priv ? { name: made.name, auth: made.auth } : undefined,
      level: made.priv ? 3 : made.auth ? 1 : 0,
    };
    let e = this.users.get(made.name);
    if (!e) this.users.set(made.name, (e = { byEngine: new Map() }));
    if (cfg.engineId) e.byEngine.set(cfg.engineId.replace(/^0x/i, '').toLowerCase(), user);
    else e.any = user;
  }

  protected override onHandlerError(e: unknown, rinfo: RemoteInfo): void {
    this.drop(`internal error: ${(e as Error).message}`, rinfo);
  }

  private drop(reason: string, rinfo: RemoteInfo, kind: DropKind = 'other'): void {
    this.dropped++;
    if (kind === 'replay') this.replays++;
    else if (kind === 'notInTimeWindow') this.notInTimeWindows++;
    this.opts.onDrop?.(reason, `${rinfo.address}:${rinfo.port}`, kind);
  }

  protected onMessage(buf: Buffer, rinfo: RemoteInfo): void {
    let m;
    try {
      m = decodeMessage(buf);
    } catch (e) {
      return this.drop(`malformed message: ${(e as Error).message}`, rinfo);
    }
    if (m.version === 3) return this.onV3(m as V3Message, rinfo);
    const community = m.community.toString('utf8');
    if (this.opts.community !== undefined && community !== this.opts.community) return this.drop(`unknown community "${community}"`, rinfo);
    const pdu = m.pdu;
    // RFC 3584 2.1: SNMPv1 carries only the v1 Trap-PDU as a notification (an SNMPv2-Trap or
    // InformRequest in a v1 message is malformed), and v2c never carries it.
    if (m.version === 0 && pdu.type !== PduType.TrapV1)
      return this.drop(`PDU type 0x${pdu.type.toString(16)} in an SNMPv1 message (only the v1 Trap-PDU)`, rinfo);
    if (pdu.type === PduType.TrapV1) {
      if (m.version !== 0) return this.drop('v1 Trap-PDU in a v2c message', rinfo);
      const t = pdu as Pdu & TrapV1Fields;
      return this.emit(rinfo, '1', 'trap', { community }, v1TrapOid(t), t.timestamp, t.varbinds, {
        enterprise: t.enterprise,
        agentAddr: t.agentAddr,
        genericTrap: t.genericTrap,
        specificTrap: t.specificTrap,
      });
    }
    if (pdu.type !== PduType.TrapV2 && pdu.type !== PduType.Inform) return this.drop(`unexpected PDU type 0x${pdu.type.toString(16)}`, rinfo);
    const bad = notificationError(pdu);
    if (bad) return this.drop(bad, rinfo); // before the acknowledgement: a malformed inform is not taken
    if (pdu.type === PduType.Inform) {
      const ack: Pdu = { type: PduType.Response, requestId: pdu.requestId, errorStatus: 0, errorIndex: 0, varbinds: pdu.varbinds };
      this.socket?.send(encodeCommunity(m.version, m.community, ack), rinfo.port, rinfo.address);
    }
    this.emitV2(rinfo, '2c', pdu, { community });
  }

  /** A notification that passed notificationError(): sysUpTime.0 and snmpTrapOID.0 come first, typed. */
  private emitV2(rinfo: RemoteInfo, version: '2c' | '3', pdu: AnyPdu, who: { community?: string; user?: string; engineId?: string }): void {
    const vbs = pdu.varbinds;
    this.emit(rinfo, version, pdu.type === PduType.Inform ? 'inform' : 'trap', who, vbs[1]!.value as string, vbs[0]!.value as number, vbs.slice(2));
  }

  private emit(
    rinfo: RemoteInfo,
    version: TrapEvent['version'],
    kind: TrapEvent['kind'],
    who: { community?: string; user?: string; engineId?: string },
    trapOid: string,
    uptime: number | undefined,
    varbinds: VarBind[],
    v1?: TrapEvent['v1'],
  ): void {
    this.received++;
    this.opts.onTrap({
      time: new Date().toISOString(),
      source: `${rinfo.address}:${rinfo.port}`,
      version,
      kind,
      ...who,
      trapOid,
      ...(uptime !== undefined ? { uptime } : {}),
      varbinds,
      ...(v1 ? { v1 } : {}),
    });
  }

  private findUser(name: string, engineId: Buffer): RxUser | undefined {
    const e = this.users.get(name);
    return e ? (e.byEngine.get(engineId.toString('hex')) ?? e.any) : undefined;
  }

  private onV3(m: V3Message, rinfo: RemoteInfo): void {
    const reportable = !!(m.flags & 4);
    if (reportable && !m.engineId.equals(this.engineId)) {
      // Inform sender discovering us (RFC 3414 4): report our engine ID, boots and time.
      return this.report(m, rinfo, USM_STATS.unknownEngineIDs);
    }
    const rx = this.findUser(m.userName, m.engineId);
    if (!rx) {
      if (reportable) this.report(m, rinfo, USM_STATS.unknownUserNames);
      return this.drop(`unknown SNMPv3 user "${m.userName}" (engine ${m.engineId.toString('hex')})`, rinfo);
    }
    // The level check costs nothing and comes before any key is localised: localising per new
    // engine ID costs a hash (and for Reeder-extended privacy keys, 3DES/AES192C/AES256C, a 1 MB
    // password-to-key), so forged messages with random engine IDs must not get that far.
    const level = m.flags & 3;
    if (level === 2 || (level & 1) !== (rx.level & 1) || level > rx.level) {
      if (reportable) this.report(m, rinfo, USM_STATS.unsupportedSecLevels);
      return this.drop(`SNMPv3 user "${m.userName}": unsupportedSecLevel (msgFlags ${m.flags & 3}, user level ${rx.level})`, rinfo);
    }
    // The MAC is checked with the auth key alone; the privacy key is derived only after it passed.
    let local: LocalUser | null = null;
    if (level & 1) {
      local = localize(rx.authOnly ?? rx.user, m.engineId);
      if (!macMatches(m, local)) {
        if (reportable) this.report(m, rinfo, USM_STATS.wrongDigests);
        return this.drop(`SNMPv3 user "${m.userName}": wrongDigest`, rinfo);
      }
      if (level === 3) local = localize(rx.user, m.engineId);
    }
    const res = unwrapV3(m, local, { macChecked: true });
    if ('error' in res) {
      if (reportable)
        this.report(
          m,
          rinfo,
          res.error === 'wrongDigest' ? USM_STATS.wrongDigests : res.error === 'decryptionError' ? USM_STATS.decryptionErrors : USM_STATS.unsupportedSecLevels,
        );
      return this.drop(`SNMPv3 user "${m.userName}": ${res.error}`, rinfo);
    }
    const pdu = res.pdu;
    if (pdu.type === PduType.Inform) {
      // For an inform we are the authoritative engine (RFC 3414 3.2 step 7a): an authenticated
      // message outside our time window is refused with an authenticated report (the sender
      // resynchronises and resends), so a captured inform cannot be replayed later.
      if (!m.engineId.equals(this.engineId))
        return this.drop(`SNMPv3 inform from user "${m.userName}" for engine ${m.engineId.toString('hex')}, not ours`, rinfo);
      if (level & 1 && (m.boots !== this.engineBoots || Math.abs(m.time - this.engineTime()) > TIME_WINDOW_S)) {
        this.report(m, rinfo, USM_STATS.notInTimeWindows, { name: local!.name, auth: local!.auth! }, pdu.requestId);
        return this.drop(
          `SNMPv3 user "${m.userName}": notInTimeWindow (boots ${m.boots} time ${m.time}; ours ${this.engineBoots} ${this.engineTime()})`,
          rinfo,
          'notInTimeWindow',
        );
      }
    } else if (pdu.type !== PduType.TrapV2) return this.drop(`unexpected PDU type 0x${pdu.type.toString(16)}`, rinfo);
    const bad = notificationError(pdu);
    if (bad) return this.drop(bad, rinfo);
    // Authenticated: within its time window a captured message would otherwise be taken as often as
    // it is sent (unauthenticated ones anybody can forge anyway).
    const when = level & 1 ? this.timeliness.check(m, m.raw.subarray(m.authParams.at, m.authParams.at + m.authParams.len), pdu.type === PduType.TrapV2) : 'ok';
    if (when === 'notInTimeWindow') {
      return this.drop(
        `SNMPv3 user "${m.userName}": notInTimeWindow (engine ${m.engineId.toString('hex')} boots ${m.boots} time ${m.time}: earlier boots, or more than ${TIME_WINDOW_S} s behind the newest time seen from that engine)`,
        rinfo,
        'notInTimeWindow',
      );
    }
    if (pdu.type === PduType.Inform) {
      // The acknowledgement goes back at the inform's level (local holds exactly those keys); a
      // replayed inform is acknowledged again (the first acknowledgement may be what was lost), not delivered again.
      const ack: Pdu = { type: PduType.Response, requestId: pdu.requestId, errorStatus: 0, errorIndex: 0, varbinds: pdu.varbinds };
      this.socket?.send(encodeV3(this.header(m), local, ack), rinfo.port, rinfo.address);
    }
    if (when === 'replay') {
      return this.drop(
        `SNMPv3 user "${m.userName}": replay of a notification received already (engine ${m.engineId.toString('hex')} boots ${m.boots} time ${m.time} msgID ${m.msgId})`,
        rinfo,
        'replay',
      );
    }
    this.emitV2(rinfo, '3', pdu, { user: m.userName, engineId: m.engineId.toString('hex') });
  }

  private engineTime(): number {
    return Math.floor((Date.now() - this.startedAt) / 1000);
  }

  private header(m: V3Message) {
    return {
      msgId: m.msgId,
      maxSize: 65507,
      reportable: false,
      engineId: this.engineId,
      boots: this.engineBoots,
      time: this.engineTime(),
      userName: m.userName,
      contextEngineId: m.contextEngineId.length ? m.contextEngineId : this.engineId,
      contextName: m.contextName,
    };
  }

  /** A usmStats report; unauthenticated unless `auth` (notInTimeWindows: authNoPriv, RFC 3414 3.2 7a). */
  private report(m: V3Message, rinfo: RemoteInfo, oid: string, auth: LocalUser | null = null, requestId = m.msgId): void {
    const pdu: Pdu = { type: PduType.Report, requestId, errorStatus: 0, errorIndex: 0, varbinds: [{ oid, type: 'Counter32', value: 1 }] };
    this.socket?.send(encodeV3(this.header(m), auth, pdu), rinfo.port, rinfo.address);
  }
}

/**
 * RFC 3416 4.2.6/4.2.7: the first varbind of an SNMPv2-Trap or InformRequest is sysUpTime.0
 * (TimeTicks), the second snmpTrapOID.0 (OBJECT IDENTIFIER). Anything else is dropped: an
 * uptime of another type (a Counter64 bigint, a Buffer) would reach the event consumers as is.
 */
function notificationError(pdu: AnyPdu): string | undefined {
  const [up, oid] = pdu.varbinds;
  if (up?.oid !== SYS_UPTIME) return `notification whose first varbind is ${up ? up.oid : 'missing'}, not sysUpTime.0`;
  if (up.type !== 'TimeTicks') return `notification with sysUpTime.0 of type ${up.type}, not TimeTicks`;
  if (oid?.oid !== SNMP_TRAP_OID) return `notification whose second varbind is ${oid ? oid.oid : 'missing'}, not snmpTrapOID.0`;
  if (oid.type !== 'ObjectIdentifier') return `notification with snmpTrapOID.0 of type ${oid.type}, not ObjectIdentifier`;
  return undefined;
}
