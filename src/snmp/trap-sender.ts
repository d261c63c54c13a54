// Trap sender: v1 traps, v2c and v3 traps and informs. A v3 trap is sent with our own engine ID
// (we are authoritative); a v3 inform discovers the receiver's engine first (session.ts).
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { randomBytes } from 'node:crypto';
import { encodeCommunity, encodeV3, PduType, type Pdu, type TrapV1Fields } from './message.js';
import { SnmpSession, type TargetOptions } from './session.js';
import { localize, makeUser } from './usm.js';
import { makeVarBind, parseOid, SnmpInputError, type VarBind } from './values.js';

export interface VarBindInput {
  oid: string;
  type: string;
  value?: unknown;
}

export interface TrapSendOptions extends TargetOptions {
  /** Notification OID: numeric, or a name the resolver turns into one (e.g. IF-MIB::linkDown). */
  trapOid: string;
  varbinds?: (VarBindInput | VarBind)[];
  /** Send an inform and wait for the acknowledgement (v2c, v3). */
  inform?: boolean;
  /** sysUpTime.0 in hundredths of a second (default: process uptime). */
  uptime?: number;
  /** Resolves symbolic names (notification and varbind OIDs) to numeric OIDs. */
  resolver?: (name: string) => string | undefined;
  /** v3 traps: our engine ID in hex (random per process when absent). */
  engineId?: string;
  /** v1 traps: the agent-addr field (default 127.0.0.1; the sending interface is not known before sending). */
  agentAddr?: string;
}

export interface TrapSendResult {
  version: string;
  kind: 'trap' | 'inform';
  trapOid: string;
  varbinds: number;
  /** Informs: the receiver acknowledged. */
  acknowledged?: boolean;
}

const processEngineId = Buffer.concat([Buffer.from('80001f8880', 'hex'), randomBytes(8)]);
const SNMP_TRAPS = '1.3.6.1.6.3.1.1.5.';

function resolveOid(text: string, resolver: TrapSendOptions['resolver'], what: string): string {
  if (/^\.?\d+(\.\d+)+$/.test(text.trim())) return parseOid(text, what);
  const hit = resolver?.(text.trim());
  if (!hit) throw new SnmpInputError(`${what} "${text}" is not numeric and ${resolver ? 'is not known to the loaded MIBs' : 'no MIB resolver is available'}`);
  return parseOid(hit, what);
}

/** RFC 3584 3.2: v1 enterprise/generic/specific for a v2 notification OID. */
export function v1Fields(trapOid: string, agentAddr: string, uptime: number): TrapV1Fields {
  if (trapOid.startsWith(SNMP_TRAPS) && trapOid.split('.').length === 10) {
    const g = Number(trapOid.slice(SNMP_TRAPS.length)) - 1;
    if (g >= 0 && g <= 5) return { enterprise: '1.3.6.1.6.3.1.1.5', agentAddr, genericTrap: g, specificTrap: 0, timestamp: uptime };
  }
  const parts = trapOid.split('.');
  const specific = Number(parts.pop());
  if (parts[parts.length - 1] === '0') parts.pop();
  return { enterprise: parts.join('.'), agentAddr, genericTrap: 6, specificTrap: specific, timestamp: uptime };
}

export async function sendTrap(opts: TrapSendOptions): Promise<TrapSendResult> {
  const version = opts.version ?? '2c';
  const trapOid = resolveOid(opts.trapOid, opts.resolver, 'notification OID');
  const varbinds: VarBind[] = (opts.varbinds ?? []).map((v, i) => {
    try {
      const oid = resolveOid(v.oid, opts.resolver, 'varbind OID');
      return makeVarBind(oid, v.type, v.value);
    } catch (e) {
      throw new SnmpInputError(`varbind ${i + 1}: ${(e as Error).message}`);
    }
  });
  const uptime = Math.floor(opts.uptime ?? process.uptime() * 100) >>> 0;
  const inform = !!opts.inform;
  if (inform && version === '1') throw new SnmpInputError('SNMPv1 has no informs; use version 2c or 3');
  const c64 = version === '1' ? varbinds.findIndex((v) => v.type === 'Counter64') : -1;
  if (c64 >= 0) throw new SnmpInputError(`varbind ${c64 + 1}: SNMPv1 has no Counter64 (RFC 3584); use version 2c or 3`);
  const result: TrapSendResult = { version, kind: inform ? 'inform' : 'trap', trapOid, varbinds: varbinds.length };
  const full: VarBind[] = [
    { oid: '1.3.6.1.2.1.1.3.0', type: 'TimeTicks', value: uptime },
    { oid: '1.3.6.1.6.3.1.1.4.1.0', type: 'ObjectIdentifier', value: trapOid },
    ...varbinds,
  ];

  if (inform) {
    const session = await SnmpSession.open({ ...opts, port: opts.port ?? 162 });
    try {
      await session.send({ type: PduType.Inform, requestId: 0, errorStatus: 0, errorIndex: 0, varbinds: full }, true);
      result.acknowledged = true;
      return result;
    } finally {
      session.close();
    }
  }

  let msg: Buffer;
  if (version === '1') {
    const pdu = { type: PduType.TrapV1, requestId: 0, errorStatus: 0, errorIndex: 0, varbinds, ...v1Fields(trapOid, opts.agentAddr ?? '127.0.0.1', uptime) };
    msg = encodeCommunity(0, opts.community ?? 'public', pdu);
  } else if (version === '2c') {
    msg = encodeCommunity(1, opts.community ?? 'public', {
      type: PduType.TrapV2,
      requestId: (Math.random() * 0x7fffffff) | 0,
      errorStatus: 0,
      errorIndex: 0,
      varbinds: full,
    });
  } else {
    if (!opts.user) throw new SnmpInputError('SNMPv3 needs a user (security name and keys)');
    const engineId = opts.engineId ? Buffer.from(opts.engineId.replace(/^0x/i, ''), 'hex') : processEngineId;
    const user = makeUser(opts.user);
    const local = user.auth ? localize(user, engineId) : null;
    const pdu: Pdu = { type: PduType.TrapV2, requestId: (Math.random() * 0x7fffffff) | 0, errorStatus: 0, errorIndex: 0, varbinds: full };
    msg = encodeV3(
      {
        msgId: pdu.requestId,
        maxSize: 65507,
        reportable: false,
        engineId,
        boots: 1,
        time: Math.floor(process.uptime()),
        userName: user.name,
        contextEngineId: engineId,
        contextName: opts.contextName ?? '',
      },
      local,
      pdu,
    );
  }
  await sendDatagram(opts.host, opts.port ?? 162, msg);
  return result;
}

async function sendDatagram(host: string, port: number, msg: Buffer): Promise<void> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new SnmpInputError(`port ${port} is not a UDP port (1-65535)`);
  let address: string;
  let family: number;
  try {
    ({ address, family } = await lookup(host));
  } catch {
    throw new SnmpInputError(`cannot resolve host "${host}"`);
  }
  const s = createSocket(family === 6 ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((res, rej) => s.send(msg, port, address, (e) => (e ? rej(e) : res())));
  } finally {
    s.close();
  }
}
