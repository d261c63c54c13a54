// Trap receiver: v1 and v2c traps, v2c informs (acknowledged), v3 traps and informs from many
// USM users at once. For a v3 trap the sender is the authoritative engine, so each user's keys
// are localised per sender engine ID (cached in usm.ts); for an inform the receiver is
// authoritative and answers discovery probes with its own engine ID.
import type { RemoteInfo } from 'node:dgram';
import { engineIdFrom, UdpService } from './udp.js';
import { decodeMessage, encodeCommunity, encodeV3, PduType, unwrapV3, USM_STATS, type AnyPdu, type Pdu, type TrapV1Fields, type V3Message } from './message.js';
import { localize, makeUser, type UsmUser, type UsmUserConfig } from './usm.js';
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
  onTrap(event: TrapEvent): void;
  /** Dropped messages (bad community, unknown user, wrong digest, malformed), with the reason. */
  onDrop?(reason: string, source: string): void;
}

const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';
const SNMP_TRAP_OID = '1.3.6.1.6.3.1.1.4.1.0';
const SNMP_TRAPS = '1.3.6.1.6.3.1.1.5';

/** RFC 3584 3.1: the v2 notification OID of a v1 trap. */
export function v1TrapOid(t: TrapV1Fields): string {
  return t.genericTrap < 6 ? `${SNMP_TRAPS}.${t.genericTrap + 1}` : `${t.enterprise}.0.${t.specificTrap}`;
}

export class TrapReceiver extends UdpService {
  private users = new Map<string, { any?: UsmUser; byEngine: Map<string, UsmUser> }>();
  readonly engineId: Buffer;
  received = 0;
  dropped = 0;

  constructor(private opts: TrapReceiverOptions) {
    super(() => this.opts, 162, 8 << 20);
    this.engineId = engineIdFrom(opts.engineId);
    for (const u of opts.users ?? []) this.addUser(u);
  }

  addUser(cfg: ReceiverUserConfig): void {
    const user = makeUser(cfg);
    let e = this.users.get(user.name);
    if (!e) this.users.set(user.name, (e = { byEngine: new Map() }));
    if (cfg.engineId) e.byEngine.set(cfg.engineId.replace(/^0x/i, '').toLowerCase(), user);
    else e.any = user;
  }

  private drop(reason: string, rinfo: RemoteInfo): void {
    this.dropped++;
    this.opts.onDrop?.(reason, `${rinfo.address}:${rinfo.port}`);
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
    if (pdu.type === PduType.TrapV1) {
      if (m.version !== 0) return this.drop('v1 Trap-PDU in a v2c message', rinfo);
      const t = pdu as Pdu & TrapV1Fields;
      return this.emit(rinfo, '1', 'trap', { community }, v1TrapOid(t), t.timestamp, t.varbinds, {
        enterprise: t.enterprise, agentAddr: t.agentAddr, genericTrap: t.genericTrap, specificTrap: t.specificTrap,
      });
    }
    if (pdu.type !== PduType.TrapV2 && pdu.type !== PduType.Inform) return this.drop(`unexpected PDU type 0x${pdu.type.toString(16)}`, rinfo);
    if (pdu.type === PduType.Inform) {
      const ack: Pdu = { type: PduType.Response, requestId: pdu.requestId, errorStatus: 0, errorIndex: 0, varbinds: pdu.varbinds };
      this.socket?.send(encodeCommunity(m.version, m.community, ack), rinfo.port, rinfo.address);
    }
    this.emitV2(rinfo, '2c', pdu, { community });
  }

  private emitV2(rinfo: RemoteInfo, version: '2c' | '3', pdu: AnyPdu, who: { community?: string; user?: string; engineId?: string }): void {
    const vbs = pdu.varbinds;
    let uptime: number | undefined;
    let trapOid = '';
    let rest = 0;
    if (vbs[0]?.oid === SYS_UPTIME) (uptime = vbs[0].value as number), rest++;
    if (vbs[rest]?.oid === SNMP_TRAP_OID) (trapOid = String(vbs[rest]!.value)), rest++;
    if (!trapOid) return this.drop('notification without snmpTrapOID.0', rinfo);
    this.emit(rinfo, version, pdu.type === PduType.Inform ? 'inform' : 'trap', who, trapOid, uptime, rest ? vbs.slice(rest) : vbs);
  }

  private emit(rinfo: RemoteInfo, version: TrapEvent['version'], kind: TrapEvent['kind'], who: { community?: string; user?: string; engineId?: string }, trapOid: string, uptime: number | undefined, varbinds: VarBind[], v1?: TrapEvent['v1']): void {
    this.received++;
    this.opts.onTrap({ time: new Date().toISOString(), source: `${rinfo.address}:${rinfo.port}`, version, kind, ...who, trapOid, ...(uptime !== undefined ? { uptime } : {}), varbinds, ...(v1 ? { v1 } : {}) });
  }

  private findUser(name: string, engineId: Buffer): UsmUser | undefined {
    const e = this.users.get(name);
    return e ? (e.byEngine.get(engineId.toString('hex')) ?? e.any) : undefined;
  }

  private onV3(m: V3Message, rinfo: RemoteInfo): void {
    const reportable = !!(m.flags & 4);
    if (reportable && !m.engineId.equals(this.engineId)) {
      // Inform sender discovering us (RFC 3414 4): report our engine ID, boots and time.
      return this.report(m, rinfo, USM_STATS.unknownEngineIDs);
    }
    const user = this.findUser(m.userName, m.engineId);
    if (!user) {
      if (reportable) this.report(m, rinfo, USM_STATS.unknownUserNames);
      return this.drop(`unknown SNMPv3 user "${m.userName}" (engine ${m.engineId.toString('hex')})`, rinfo);
    }
    const local = localize(user, m.engineId);
    const res = unwrapV3(m, local);
    if ('error' in res) {
      if (reportable) this.report(m, rinfo, res.error === 'wrongDigest' ? USM_STATS.wrongDigests : res.error === 'decryptionError' ? USM_STATS.decryptionErrors : USM_STATS.unsupportedSecLevels);
      return this.drop(`SNMPv3 user "${m.userName}": ${res.error}`, rinfo);
    }
    const pdu = res.pdu;
    if (pdu.type === PduType.Inform) {
      const level = m.flags & 2 ? local : m.flags & 1 ? { name: local.name, auth: local.auth } : null;
      const ack: Pdu = { type: PduType.Response, requestId: pdu.requestId, errorStatus: 0, errorIndex: 0, varbinds: pdu.varbinds };
      this.socket?.send(encodeV3(this.header(m), level, ack), rinfo.port, rinfo.address);
    } else if (pdu.type !== PduType.TrapV2) return this.drop(`unexpected PDU type 0x${pdu.type.toString(16)}`, rinfo);
    this.emitV2(rinfo, '3', pdu, { user: m.userName, engineId: m.engineId.toString('hex') });
  }

  private header(m: V3Message) {
    return { msgId: m.msgId, maxSize: 65507, reportable: false, engineId: this.engineId, boots: 1, time: Math.floor((Date.now() - this.startedAt) / 1000), userName: m.userName, contextEngineId: m.contextEngineId.length ? m.contextEngineId : this.engineId, contextName: m.contextName };
  }

  private report(m: V3Message, rinfo: RemoteInfo, oid: string): void {
    const pdu: Pdu = { type: PduType.Report, requestId: m.msgId, errorStatus: 0, errorIndex: 0, varbinds: [{ oid, type: 'Counter32', value: 1 }] };
    this.socket?.send(encodeV3(this.header(m), null, pdu), rinfo.port, rinfo.address);
  }
}
