// Sink `snmp_trap`: one SNMP notification per record, sent from one long-lived UDP socket built from
// the trap sender's parts (src/snmp/trap-sender.ts, message.ts, usm.ts): sysUpTime.0 first,
// snmpTrapOID.0 = trap_oid second, then the varbinds built from the record's fields. v1 traps,
// v2c and v3 traps; with `inform: true` (beyond doc 3) v2c/v3 informs, each acknowledged by the
// receiver before the write counts. A value that does not fit its SNMP type, a field that is not
// there, or a notification too large for a datagram is refused for that record alone (WriteResult
// `rejected`: the record goes to the DLQ) while the others are sent.
import { createSocket, type Socket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { WriteError, errorMessage } from '../../../core/errors.js';
import type { MibIndex, MibNode } from '../../../mib/mib-index.js';
import { objectNode } from '../../../mib/varbinds.js';
import { decodeMessage, encodeCommunity, encodeV3, PduType, type Pdu } from '../../../snmp/message.js';
import { SnmpSession } from '../../../snmp/session.js';
import { v1Fields } from '../../../snmp/trap-sender.js';
import { engineIdFrom } from '../../../snmp/udp.js';
import { localize, makeUser, type LocalUser } from '../../../snmp/usm.js';
import { coerceValue, parseType, SnmpInputError, type SnmpType, type VarBind } from '../../../snmp/values.js';
import { Connection } from '../../connector-runtime/connection.js';
import { defineSink, type Rec, type WriteResult } from '../../types.js';
import { communityField, lintV3, mibIndex, resolveName, usmUser, v3Fields, versionField } from '../../common/snmp.js';

const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';
const SNMP_TRAP_OID = '1.3.6.1.6.3.1.1.4.1.0';
/** The largest UDP payload over IPv4. */
const MAX_DATAGRAM = 65507;
/** Informs in flight at once (each waits for its acknowledgement). */
const INFORM_WINDOW = 64;

const config = Type.Object(
  {
    host: Type.String({ minLength: 1, description: 'Trap receiver (manager) host name or address.' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 162, description: 'UDP port of the trap receiver.' }),
    community: communityField('Community of v1 and v2c notifications.'),
    version: versionField("SNMP version: '1' (SNMPv1 Trap-PDU, mapped per RFC 3584), '2c' or '3' (USM fields below)."),
    trap_oid: Type.String({
      minLength: 1,
      description:
        'Notification OID placed in snmpTrapOID.0: numeric (1.3.6.1.6.3.1.1.5.3) or a MIB name (IF-MIB::linkDown, or linkDown found in mib_modules).',
    }),
    varbinds: Type.Array(
      Type.Object(
        {
          oid: Type.String({ minLength: 1, description: 'Varbind OID: numeric or a MIB name with its instance (IF-MIB::ifIndex.0, ifOperStatus.3).' }),
          value_field: Type.String({
            minLength: 1,
            description: 'Record field holding the value (a dot path reaches into objects). A record without it is dead-lettered.',
          }),
          type: Type.Optional(
            Type.String({
              minLength: 1,
              description:
                'SNMP type: Integer32, OctetString (or hex for hex text), ObjectIdentifier, IpAddress, Counter32, Gauge32 (Unsigned32), TimeTicks, Counter64, Opaque, Null. Absent: the MIB syntax of the object when known, else auto-typed from the value.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      {
        default: [],
        description:
          'The varbinds after sysUpTime.0 and snmpTrapOID.0, in order. Empty: every field of the record is one varbind, its name taken as the OID (numeric or a MIB name) and its value auto-typed (see the connector page).',
      },
    ),
    mib_modules: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'MIB modules for symbolic OIDs (bare names are looked up in them first); writes fail, naming it, when one is not loaded.',
    }),
    mib_dirs: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Directories of extra MIB sources, loaded in front of the MIB store (beyond doc 3).',
    }),
    ...v3Fields,
    engine_id: Type.Optional(
      Type.String({
        pattern: '^(0x)?([0-9a-fA-F]{2}){5,32}$',
        description:
          "SNMPv3 traps: our engine ID (hex), which the receiver's user must be bound to (snmptrapd: createUser -e <engine ID>). Random per start when absent.",
      }),
    ),
    inform: Type.Boolean({
      default: false,
      description:
        'Send informs (v2c or v3, beyond doc 3): each record counts as written once the receiver acknowledged it; unacknowledged ones fail the write, which the runtime retries.',
    }),
    timeout_seconds: Type.Number({ exclusiveMinimum: 0, default: 5, description: 'Informs: how long to wait for each acknowledgement per attempt.' }),
    retries: Type.Integer({ minimum: 0, default: 1, description: 'Informs: further attempts after the first.' }),
    agent_address: Type.String({ default: '127.0.0.1', description: 'SNMPv1 only: the agent-addr field of the Trap-PDU (an IPv4 address).' }),
  },
  { additionalProperties: false },
);

type Config = (typeof config)['static'];

/** The SNMP type of an object's values from its MIB syntax (a varbind without `type`). */
const TYPE_OF_BASE: Record<string, SnmpType> = {
  INTEGER: 'Integer32',
  Integer32: 'Integer32',
  Unsigned32: 'Gauge32',
  Gauge32: 'Gauge32',
  Counter32: 'Counter32',
  Counter64: 'Counter64',
  TimeTicks: 'TimeTicks',
  IpAddress: 'IpAddress',
  Opaque: 'Opaque',
  'OCTET STRING': 'OctetString',
  'OBJECT IDENTIFIER': 'ObjectIdentifier',
  BITS: 'OctetString',
};

const I32_MIN = -0x80000000;
const I32_MAX = 0x7fffffff;
const U64_MAX = (1n << 64n) - 1n;

/**
 * Auto-typing of a JSON value: integers Integer32 (Counter64 above 2^31-1), other numbers and
 * strings OctetString (the number's text), booleans Integer32 as TruthValue (true 1, false 2),
 * null Null, objects and arrays OctetString of their JSON text.
 */
export function autoVarBind(oid: string, value: unknown): VarBind {
  if (value === null) return { oid, type: 'Null', value: null };
  if (typeof value === 'boolean') return { oid, type: 'Integer32', value: value ? 1 : 2 };
  if (typeof value === 'bigint') {
    if (value >= I32_MIN && value <= I32_MAX) return { oid, type: 'Integer32', value: Number(value) };
    if (value > 0n && value <= U64_MAX) return { oid, type: 'Counter64', value };
    throw new SnmpInputError(`value ${value} for ${oid} fits no SNMP integer type (Integer32 from -2147483648, Counter64 up to 18446744073709551615)`);
  }
  if (typeof value === 'number') {
    if (Number.isInteger(value)) {
      if (value >= I32_MIN && value <= I32_MAX) return { oid, type: 'Integer32', value };
      if (value > 0 && Number.isSafeInteger(value)) return { oid, type: 'Counter64', value: BigInt(value) };
      throw new SnmpInputError(
        `value ${value} for ${oid} fits no SNMP integer type exactly (Integer32 from -2147483648; Counter64 takes larger values as exact decimal strings with type Counter64)`,
      );
    }
    return { oid, type: 'OctetString', value: Buffer.from(String(value)) };
  }
  if (typeof value === 'string') return { oid, type: 'OctetString', value: Buffer.from(value) };
  return { oid, type: 'OctetString', value: Buffer.from(JSON.stringify(value)) };
}

/** A record field by name, or by dot path when no field has the whole name. */
function fieldOf(r: Rec, path: string): unknown {
  if (Object.hasOwn(r, path)) return r[path];
  let v: unknown = r;
  for (const p of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, p)) return undefined;
    v = (v as Rec)[p];
  }
  return v;
}

interface PlannedVarBind {
  oid: string;
  field: string;
  type?: SnmpType;
  hex: boolean;
  /** Enumeration labels of the object (an INTEGER given by label). */
  enums?: Record<string, number>;
}

/** Turns records into varbind lists: the configured plan, or auto-typed fields. */
class VarBindBuilder {
  private readonly plan: PlannedVarBind[] | undefined;
  private readonly byName = new Map<string, string | null>();

  constructor(
    private readonly c: Config,
    private readonly ix: MibIndex | undefined,
  ) {
    if (!c.varbinds.length) return;
    this.plan = c.varbinds.map((v, i) => {
      const oid = this.oid(v.oid);
      if (!oid)
        throw new WriteError(
          `snmp_trap: varbinds[${i}].oid "${v.oid}" is ${ix ? 'not known to the loaded MIBs' : 'not numeric'}${c.mib_modules.length ? ` (looked up in ${c.mib_modules.join(', ')} first)` : ''}`,
          false,
        );
      const node = ix ? objectNode(ix, oid)?.node : undefined;
      let type: SnmpType | undefined;
      try {
        type = v.type !== undefined ? parseType(v.type) : syntaxType(node);
      } catch (e) {
        throw new WriteError(`snmp_trap: varbinds[${i}].type: ${errorMessage(e)}`, false);
      }
      const hex = v.type !== undefined && ['hex', 'hexstring', 'x'].includes(v.type.trim().toLowerCase());
      return { oid, field: v.value_field, ...(type ? { type } : {}), hex, ...(node?.syntax?.enums ? { enums: node.syntax.enums } : {}) };
    });
  }

  /** A numeric OID for a name, cached; undefined when unknown. */
  oid(name: string): string | undefined {
    let hit = this.byName.get(name);
    if (hit === undefined) {
      hit = resolveName(this.ix, this.c.mib_modules, name) ?? null;
      if (this.byName.size < 10_000) this.byName.set(name, hit);
    }
    return hit ?? undefined;
  }

  /** The varbinds of one record; throws SnmpInputError (the record's reason) when one does not fit. */
  build(r: Rec): VarBind[] {
    if (!this.plan) {
      const out: VarBind[] = [];
      for (const k of Object.keys(r)) {
        const oid = this.oid(k);
        if (!oid)
          throw new SnmpInputError(
            `field "${k}" is not an OID or a known MIB name: with an empty varbinds list every field must be one (name them in varbinds, or drop/rename the field)`,
          );
        const node = this.ix ? objectNode(this.ix, oid)?.node : undefined;
        const type = syntaxType(node);
        out.push(type ? typed(oid, type, r[k], false, node?.syntax?.enums) : autoVarBind(oid, r[k]));
      }
      return out;
    }
    return this.plan.map((p) => {
      const v = fieldOf(r, p.field);
      if (v === undefined) throw new SnmpInputError(`the record has no field "${p.field}" (varbind ${p.oid})`);
      return p.type ? typed(p.oid, p.type, v, p.hex, p.enums) : autoVarBind(p.oid, v);
    });
  }
}

function syntaxType(node: MibNode | undefined): SnmpType | undefined {
  const base = node?.syntax?.base;
  return base ? TYPE_OF_BASE[base] : undefined;
}

function typed(oid: string, type: SnmpType, value: unknown, hex: boolean, enums?: Record<string, number>): VarBind {
  if (type === 'Integer32' && typeof value === 'string' && enums && Object.hasOwn(enums, value)) value = enums[value];
  if (type === 'Integer32' && typeof value === 'boolean') value = value ? 1 : 2;
  if ((type === 'OctetString' || type === 'Opaque') && !hex && (typeof value === 'number' || typeof value === 'boolean')) value = String(value);
  return { oid, type, value: coerceValue(type, value, oid, hex) };
}

/** The UDP side: a connected socket (ICMP port-unreachable shows as ECONNREFUSED) or, for informs, a session. */
interface Link {
  socket?: Socket;
  session?: SnmpSession;
  /** Set when the socket reported an error (nothing listening): the write fails and is retried. */
  failed?: Error;
  builder: VarBindBuilder;
  trapOid: string;
  local: LocalUser | null;
  engineId: Buffer;
  startedAt: number;
}

async function resolveAddress(host: string): Promise<{ address: string; family: number }> {
  if (isIP(host)) return { address: host, family: isIP(host) };
  try {
    return await lookup(host);
  } catch {
    throw new Error(`cannot resolve host "${host}"`);
  }
}

function connectSocket(address: string, family: number, port: number): Promise<Socket> {
  const s = createSocket({ type: family === 6 ? 'udp6' : 'udp4', sendBufferSize: 4 << 20 });
  return new Promise<Socket>((res, rej) => {
    s.once('error', rej);
    s.connect(port, address, () => {
      s.off('error', rej);
      res(s);
    });
  });
}

/**
 * The reachability probe: an SNMPv3 engine discovery (an empty, unauthenticated, reportable
 * request), the one message every SNMP engine may answer without credentials. A Report proves
 * an SNMP engine listens; ICMP port-unreachable proves nothing does; silence is taken as
 * reachable (a receiver may ignore the probe, as UDP gives no other sign).
 */
async function probe(host: string, port: number, waitMs: number): Promise<'answered' | 'silent'> {
  const { address, family } = await resolveAddress(host);
  const s = await connectSocket(address, family, port);
  const msgId = (Math.random() * 0x7fffffff) | 0;
  const msg = encodeV3(
    {
      msgId,
      maxSize: MAX_DATAGRAM,
      reportable: true,
      engineId: Buffer.alloc(0),
      boots: 0,
      time: 0,
      userName: '',
      contextEngineId: Buffer.alloc(0),
      contextName: '',
    },
    null,
    { type: PduType.Get, requestId: msgId, errorStatus: 0, errorIndex: 0, varbinds: [] },
  );
  let again: NodeJS.Timeout | undefined;
  try {
    return await new Promise<'answered' | 'silent'>((resolve, reject) => {
      const timer = setTimeout(() => resolve('silent'), waitMs);
      s.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          e.code === 'ECONNREFUSED'
            ? new Error(`nothing listens on udp ${host}:${port} (ICMP port unreachable): start the trap receiver or check host and port`)
            : e,
        );
      });
      s.on('message', (buf) => {
        try {
          if (decodeMessage(buf).version === 3) {
            clearTimeout(timer);
            resolve('answered');
          }
        } catch {
          /* not an answer */
        }
      });
      s.send(msg, () => {});
      // A second datagram: the ICMP error of the first shows on the socket by then.
      again = setTimeout(() => s.send(msg, () => {}), 50);
    });
  } finally {
    clearTimeout(again);
    s.close();
  }
}

export default defineSink({
  key: 'snmp_trap',
  summary: 'Send each record as an SNMP notification (v1, v2c or v3 trap, or inform) with typed varbinds built from its fields.',
  accepts: 'records',
  delivery: {
    guarantee: 'at-most-once',
    why: 'a trap is one UDP datagram that the receiver never acknowledges: a write counts once the datagrams left this host, and one lost on the network or dropped by a busy receiver is not known. With inform: true each record counts only once the receiver acknowledged it, and an unacknowledged write is retried (at-least-once for that configuration; duplicates possible).',
  },
  config,
  lint(c) {
    const issues = lintV3(c);
    if (c.inform && c.version === '1') issues.push({ path: 'inform', message: "SNMPv1 has no informs: use version '2c' or '3'" });
    if (c.version === '1' && isIP(c.agent_address) !== 4) issues.push({ path: 'agent_address', message: 'agent_address must be an IPv4 address' });
    c.varbinds.forEach((v, i) => {
      if (v.type === undefined) return;
      try {
        parseType(v.type);
      } catch (e) {
        issues.push({ path: `varbinds.${i}.type`, message: errorMessage(e) });
      }
      if (c.version === '1' && /^(counter64|C)$/i.test(v.type.trim()))
        issues.push({ path: `varbinds.${i}.type`, message: "SNMPv1 has no Counter64 (RFC 3584): use version '2c' or '3'" });
    });
    return issues;
  },
  examples: [
    {
      title: 'Alarms as IF-MIB linkDown traps (v2c)',
      yaml: 'type: snmp_trap\nhost: nms.example.net\nport: 162\ncommunity: ${TRAP_COMMUNITY:-public}\ntrap_oid: IF-MIB::linkDown\nmib_modules: [IF-MIB]\nvarbinds:\n  - {oid: IF-MIB::ifIndex.0, value_field: if_index, type: Integer32}\n  - {oid: IF-MIB::ifAdminStatus.0, value_field: admin_status}\n  - {oid: IF-MIB::ifOperStatus.0, value_field: oper_status}',
    },
    {
      title: 'SNMPv3 authPriv informs, fields auto-typed (field names are OIDs)',
      yaml: "type: snmp_trap\nhost: 10.0.0.5\nversion: '3'\ntrap_oid: 1.3.6.1.4.1.8072.9999.1\nsecurity_name: svc\nauth_protocol: SHA256\nauth_key: ${TRAP_AUTH:-change-me-auth}\npriv_protocol: AES256\npriv_key: ${TRAP_PRIV:-change-me-priv}\ninform: true",
    },
  ],
  async test(c) {
    await probe(c.host, c.port, 1500);
  },
  create(c, ctx) {
    const v = c.version;
    const link = new Connection<Link>(
      ctx,
      'snmp_trap',
      async () => {
        const ix =
          c.mib_modules.length ||
          c.mib_dirs.length ||
          !/^\.?\d+(\.\d+)+$/.test(c.trap_oid.trim()) ||
          c.varbinds.some((x) => !/^\.?\d+(\.\d+)+$/.test(x.oid.trim())) ||
          !c.varbinds.length
            ? await mibIndex(c, ctx.mibs).catch((e: Error) => {
                throw new WriteError(`snmp_trap: ${e.message}`, false);
              })
            : undefined;
        const trapOid = resolveName(ix, c.mib_modules, c.trap_oid);
        if (!trapOid) throw new WriteError(`snmp_trap: trap_oid "${c.trap_oid}" is not numeric and not known to the loaded MIBs`, false);
        const builder = new VarBindBuilder(c, ix);
        const engineId = engineIdFrom(c.engine_id);
        let local: LocalUser | null = null;
        if (v === '3') {
          try {
            const user = makeUser(usmUser(c));
            local = user.auth ? localize(user, engineId) : { name: user.name };
          } catch (e) {
            throw new WriteError(`snmp_trap: ${errorMessage(e)}`, false);
          }
        }
        const base = { builder, trapOid, local, engineId, startedAt: Date.now() };
        if (c.inform) {
          const session = await SnmpSession.open({
            host: c.host,
            port: c.port,
            version: v,
            community: c.community,
            contextName: c.context_name ?? '',
            timeoutMs: c.timeout_seconds * 1000,
            retries: c.retries,
            ...(v === '3' ? { user: usmUser(c) } : {}),
          }).catch((e: Error) => {
            if (e instanceof SnmpInputError) throw new WriteError(`snmp_trap: ${e.message}`, false);
            throw e;
          });
          return { ...base, session };
        }
        const { address, family } = await resolveAddress(c.host);
        const socket = await connectSocket(address, family, c.port);
        const l: Link = { ...base, socket };
        socket.on('error', (e: NodeJS.ErrnoException) => void (l.failed ??= unreachable(e)));
        return l;
      },
      async (l) => {
        l.session?.close();
        if (l.socket) await new Promise<void>((r) => l.socket!.close(() => r()));
      },
    );

    /** ICMP port-unreachable of an earlier datagram, said as what it means. */
    const unreachable = (e: NodeJS.ErrnoException): Error =>
      e.code === 'ECONNREFUSED' ? new Error(`nothing listens on udp ${c.host}:${c.port} (ICMP port unreachable)`) : e;

    /** sysUpTime.0: hundredths of a second since the sink connected. */
    const uptime = (l: Link) => Math.floor((Date.now() - l.startedAt) / 10) >>> 0;

    /** The datagram of one record's notification. */
    const encode = (l: Link, vbs: VarBind[]): Buffer => {
      const up = uptime(l);
      if (v === '1') {
        const c64 = vbs.findIndex((x) => x.type === 'Counter64');
        if (c64 >= 0) throw new SnmpInputError(`varbind ${vbs[c64]!.oid}: SNMPv1 has no Counter64 (RFC 3584); use version 2c or 3`);
        return encodeCommunity(0, c.community, {
          type: PduType.TrapV1,
          requestId: 0,
          errorStatus: 0,
          errorIndex: 0,
          varbinds: vbs,
          ...v1Fields(l.trapOid, c.agent_address, up),
        });
      }
      const full: VarBind[] = [{ oid: SYS_UPTIME, type: 'TimeTicks', value: up }, { oid: SNMP_TRAP_OID, type: 'ObjectIdentifier', value: l.trapOid }, ...vbs];
      const pdu: Pdu = { type: PduType.TrapV2, requestId: (Math.random() * 0x7fffffff) | 0, errorStatus: 0, errorIndex: 0, varbinds: full };
      if (v === '2c') return encodeCommunity(1, c.community, pdu);
      return encodeV3(
        {
          msgId: pdu.requestId,
          maxSize: MAX_DATAGRAM,
          reportable: false,
          engineId: l.engineId,
          boots: 1,
          time: Math.floor((Date.now() - l.startedAt) / 1000),
          userName: l.local!.name,
          contextEngineId: l.engineId,
          contextName: c.context_name ?? '',
        },
        l.local!.auth ? l.local : null,
        pdu,
      );
    };

    /** Sends one trap per record; resolves with the bytes of the datagrams. */
    const sendTraps = async (l: Link, records: Rec[], rejected: WriteResult['rejected'] & object): Promise<number> => {
      const socket = l.socket!;
      let pending = 0;
      let bytes = 0;
      let error: Error | undefined;
      let done: (() => void) | undefined;
      const sent = (e: Error | null) => {
        if (e) error ??= unreachable(e);
        if (--pending === 0) done?.();
      };
      for (let i = 0; i < records.length; i++) {
        let msg: Buffer;
        try {
          msg = encode(l, l.builder.build(records[i]!));
          if (msg.length > MAX_DATAGRAM)
            throw new SnmpInputError(`the notification is ${msg.length} bytes, more than a UDP datagram carries (${MAX_DATAGRAM})`);
        } catch (e) {
          if (!(e instanceof SnmpInputError)) throw e;
          rejected.push({ index: i, reason: `snmp_trap: ${e.message}` });
          continue;
        }
        pending++;
        bytes += msg.length;
        socket.send(msg, sent);
      }
      if (pending) await new Promise<void>((r) => (done = r));
      // An ICMP port-unreachable of an earlier datagram shows as an error on a later send.
      await new Promise((r) => setImmediate(r));
      const failed = error ?? l.failed;
      if (failed) {
        l.failed = undefined;
        throw failed;
      }
      return bytes;
    };

    const sendInforms = async (l: Link, records: Rec[], rejected: WriteResult['rejected'] & object) => {
      const jobs: (() => Promise<void>)[] = [];
      records.forEach((r, i) => {
        let vbs: VarBind[];
        try {
          vbs = l.builder.build(r);
        } catch (e) {
          if (!(e instanceof SnmpInputError)) throw e;
          return void rejected.push({ index: i, reason: `snmp_trap: ${e.message}` });
        }
        const full: VarBind[] = [
          { oid: SYS_UPTIME, type: 'TimeTicks', value: uptime(l) },
          { oid: SNMP_TRAP_OID, type: 'ObjectIdentifier', value: l.trapOid },
          ...vbs,
        ];
        jobs.push(async () => {
          try {
            await l.session!.send({ type: PduType.Inform, requestId: 0, errorStatus: 0, errorIndex: 0, varbinds: full }, true);
          } catch (e) {
            if (e instanceof SnmpInputError) return void rejected.push({ index: i, reason: `snmp_trap: ${e.message}` });
            throw e;
          }
        });
      });
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(INFORM_WINDOW, jobs.length) }, async () => {
          while (next < jobs.length) await jobs[next++]!();
        }),
      );
    };

    return {
      async write(batch) {
        const rejected: { index: number; reason: string }[] = [];
        const bytes = await link.use(async (l) => {
          if (!c.inform) return sendTraps(l, batch.records!, rejected);
          // Informs go through the SNMP session, which counts what it sends (resent informs and engine discovery too).
          const before = l.session!.bytesSent;
          await sendInforms(l, batch.records!, rejected);
          return l.session!.bytesSent - before;
        });
        return { rejected: rejected.sort((a, b) => a.index - b.index), bytes };
      },
      close: () => link.end(),
    };
  },
});
