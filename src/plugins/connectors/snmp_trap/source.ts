// Source `snmp_trap` (stream): a trap receiver on a UDP port, built on the console's receiver core
// (src/snmp/trap-receiver.ts TrapReceiver: v1, v2c and v3 traps, v2c and v3 informs acknowledged,
// many USM users with every auth and privacy protocol). Each notification becomes one JSON record:
// the envelope (trap OID and name, version, kind, sender, community or user, engine ID, uptime),
// the varbinds as a typed list, and each varbind's value flattened under its object name.
//
// Delivery is at-most-once: a UDP trap cannot be asked for again, and an inform is acknowledged by
// the protocol as soon as it is received (before the pipeline has written it). Backpressure: the
// runtime's bounded queue (streamSource, HIGH_WATER notifications); while it is full, arriving
// notifications are dropped, counted and logged (rate-limited), as a UDP receiver must.
import { Type } from '@sinclair/typebox';
import type { MibIndex } from '../../../mib/mib-index.js';
import { describeVarBind, objectNode } from '../../../mib/varbinds.js';
import { TrapReceiver, type TrapEvent } from '../../../snmp/trap-receiver.js';
import { bindUdp } from '../../../snmp/udp.js';
import { SourceError } from '../../../core/errors.js';
import { rateLimitedWarn } from '../../connector-runtime/rate-limited-warn.js';
import { streamSource, type Message, type Session } from '../../connector-runtime/stream-source.js';
import { defineSource, type Rec, type SourceMeta } from '../../types.js';
import { communityField, lintUser, lintV3, mibIndex, userItem, usmUser, v3Fields, versionField } from '../../common/snmp.js';

/** Most notifications in one unit. */
const MAX_BATCH = 1000;
/** Queued notifications above which arriving ones are dropped until half of them are delivered. */
export const HIGH_WATER = 20_000;

/** Envelope fields of a record; a varbind whose object has one of these names keeps its MODULE::name key. */
const ENVELOPE = new Set([
  'received_at',
  'trap_oid',
  'trap_name',
  'kind',
  'version',
  'agent_address',
  'source',
  'community',
  'security_name',
  'engine_id',
  'context_name',
  'uptime',
  'enterprise',
  'generic_trap',
  'specific_trap',
  'varbinds',
]);

const config = Type.Object(
  {
    host: Type.String({
      default: '0.0.0.0',
      minLength: 1,
      description: 'Address to listen on (0.0.0.0 every IPv4 interface, :: every IPv6 one, 127.0.0.1 loopback only).',
    }),
    port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 162,
      description: 'UDP port to listen on. 162 (the standard) needs root or CAP_NET_BIND_SERVICE; 1162 is the usual unprivileged choice.',
    }),
    community: communityField('Community that v1 and v2c notifications must carry; others are dropped and counted (as snmptrapd authCommunity).'),
    version: versionField(
      "SNMP version accepted: '1' SNMPv1 traps only; '2c' SNMPv1 and SNMPv2c traps and v2c informs (the community checked); '3' SNMPv3 traps and informs only (USM users).",
    ),
    resolve_oids: Type.Boolean({
      default: true,
      description:
        'Name the trap and its varbinds through the MIB store (trap_name, varbinds[].name, enum labels) and key the flattened values by object name; false keys them by numeric OID.',
    }),
    mib_dirs: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Directories of extra MIB sources, loaded in front of the MIB store (uploaded and bundled MIBs).',
    }),
    mib_modules: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'MIB modules that must be loaded: the source does not start when one is missing (a wrong name, a source that does not compile).',
    }),
    ...v3Fields,
    users: Type.Optional(
      Type.Array(userItem, {
        description:
          'More SNMPv3 users (beyond doc 3), for fleets with different credentials; each may be bound to one sender engine ID. security_name, when set, is one more user.',
      }),
    ),
    engine_id: Type.Optional(
      Type.String({
        pattern: '^(0x)?([0-9a-fA-F]{2}){5,32}$',
        description:
          'Our SNMPv3 engine ID (hex) for informs, which senders discover; random per start when absent (set it when senders are configured with it).',
      }),
    ),
    max_queue_size: Type.Integer({
      minimum: 1,
      default: HIGH_WATER,
      description:
        'Notifications received but not yet handed to the pipeline (beyond doc 3); while the queue is full, arriving ones are dropped, counted and logged (at most one warning per 10 s).',
    }),
  },
  { additionalProperties: false },
);

type Config = (typeof config)['static'];

/** Versions a source of `version` accepts. */
const accepted = (v: Config['version']): ReadonlySet<TrapEvent['version']> => new Set(v === '1' ? ['1'] : v === '2c' ? ['1', '2c'] : ['3']);

/** The record of one notification (see docs/connectors/snmp_trap.md for the shape). */
export function trapRecord(e: TrapEvent, ix: MibIndex | undefined): Rec {
  const host = e.source.slice(0, e.source.lastIndexOf(':'));
  const r: Rec = {
    received_at: e.time,
    trap_oid: e.trapOid,
  };
  if (ix) r.trap_name = ix.toSymbolic(e.trapOid).symbolic;
  r.kind = e.kind;
  r.version = e.version;
  r.agent_address = e.v1 ? e.v1.agentAddr : host.replace(/^\[|\]$/g, '');
  r.source = e.source;
  if (e.community !== undefined) r.community = e.community;
  if (e.user !== undefined) r.security_name = e.user;
  if (e.engineId !== undefined) r.engine_id = e.engineId;
  if (e.uptime !== undefined) r.uptime = e.uptime;
  if (e.v1) {
    r.enterprise = e.v1.enterprise;
    r.generic_trap = e.v1.genericTrap;
    r.specific_trap = e.v1.specificTrap;
  }
  const list = e.varbinds.map((vb) => describeVarBind(vb, ix));
  r.varbinds = list;
  for (let i = 0; i < list.length; i++) {
    const vb = e.varbinds[i]!;
    const k = ix ? keyOf(ix, vb.oid) : undefined;
    let key = k ? k.key : vb.oid;
    // The same object twice (two instances): the later ones keep their instance suffix.
    if (k && Object.hasOwn(r, key)) key = k.suffix ? `${key}.${k.suffix}` : vb.oid;
    r[key] = list[i]!.value;
  }
  return r;
}

/** Flattened keys per varbind OID and MIB index (the same OIDs come in trap after trap). */
const keyCache = new WeakMap<MibIndex, Map<string, { key: string; suffix: string } | null>>();
const KEY_CACHE_MAX = 50_000;

function keyOf(ix: MibIndex, oid: string): { key: string; suffix: string } | null {
  let m = keyCache.get(ix);
  if (!m) keyCache.set(ix, (m = new Map()));
  let k = m.get(oid);
  if (k === undefined) {
    const o = objectNode(ix, oid);
    k = o ? { key: ENVELOPE.has(o.node.name) ? `${o.node.module}::${o.node.name}` : o.node.name, suffix: o.suffix } : null;
    if (m.size >= KEY_CACHE_MAX) m.clear();
    m.set(oid, k);
  }
  return k;
}

/** The reason class of a drop, a metric label: queue_full, version, community, usm, malformed, other. */
function dropKind(reason: string): string {
  if (reason.startsWith('unknown community')) return 'community';
  if (reason.startsWith('SNMPv3') || reason.startsWith('unknown SNMPv3')) return 'usm';
  if (reason.startsWith('malformed') || reason.startsWith('notification') || reason.includes('PDU')) return 'malformed';
  return 'other';
}

/** What to do about a port that cannot be bound, after the reason the socket gave. */
function listenError(e: unknown, host: string, port: number): SourceError {
  const code = (e as { statusCode?: number }).statusCode;
  const hint =
    code === 409
      ? `stop the other receiver there (snmptrapd, another pipeline) or choose another port`
      : code === 403
        ? 'run with CAP_NET_BIND_SERVICE, or listen on 1162 and forward 162 to it'
        : code === 400
          ? 'use an address of this machine, 0.0.0.0 or ::'
          : 'check host and port';
  return new SourceError(`cannot listen on udp ${host}:${port}: ${(e as Error).message}; ${hint}`);
}

export default defineSource({
  key: 'snmp_trap',
  summary: 'Receive SNMP traps and informs (v1, v2c, v3 with every USM auth and privacy protocol) on a UDP port; one JSON record per notification.',
  mode: 'stream',
  delivery: {
    guarantee: 'at-most-once',
    why: 'SNMP traps are UDP datagrams that cannot be asked for again: one lost on the network, sent while the source is stopped, or dropped while the pipeline is behind (the queue full) is gone. Informs are acknowledged by the protocol on receipt, before the record is written, so a pipeline failure after that loses them too.',
  },
  config,
  resources: (c) => [{ kind: 'listen', protocol: 'udp', host: c.host, port: c.port, name: 'snmp-trap' }],
  lint(c) {
    const issues = lintV3(c);
    c.users?.forEach((u, i) => issues.push(...lintUser(u, `users.${i}.`)));
    if (c.users?.length && c.version !== '3') issues.push({ path: 'users', message: "SNMPv3 users are listed: use version '3'" });
    if (c.version === '3' && c.security_name === undefined && c.users?.length) return issues.filter((x) => x.path !== 'security_name');
    return issues;
  },
  examples: [
    {
      title: 'SNMPv2c traps on the unprivileged port, names from the MIB store',
      yaml: 'type: snmp_trap\nhost: 0.0.0.0\nport: 1162\ncommunity: ${TRAP_COMMUNITY:-public}\nversion: 2c\nmib_modules: [IF-MIB]',
    },
    {
      title: 'SNMPv3 authPriv from a fleet with per-device credentials',
      yaml: "type: snmp_trap\nport: 1162\nversion: '3'\nsecurity_name: noc\nauth_protocol: SHA256\nauth_key: ${NOC_AUTH:-change-me-auth}\npriv_protocol: AES256\npriv_key: ${NOC_PRIV:-change-me-priv}\nusers:\n  - security_name: legacy\n    auth_protocol: MD5\n    auth_key: ${LEGACY_AUTH:-change-me-auth}\n    priv_protocol: DES\n    priv_key: ${LEGACY_PRIV:-change-me-priv}\n    engine_id: '0x800000090300c0ffee000001'",
    },
  ],
  async test(c) {
    let s;
    try {
      s = await bindUdp(c.host, c.port, 1 << 16, () => {});
    } catch (e) {
      throw listenError(e, c.host, c.port);
    }
    await new Promise<void>((r) => s.close(() => r()));
  },
  create(c, ctx) {
    const versions = accepted(c.version);
    const listener = `udp://${c.host.includes(':') ? `[${c.host}]` : c.host}:${c.port}`;
    const meta: SourceMeta = { listener };
    let dropped = 0;
    const telemetry = ctx.telemetry;
    const drops = rateLimitedWarn(
      ctx.log,
      (n, f) => `snmp_trap: notification dropped (${f.reason}): ${n} since the last warning, ${f.dropped_total} since the start`,
    );
    const noteDrop = (reason: string, from?: string, kind = dropKind(reason)) => {
      dropped++;
      telemetry?.dropped?.(kind, 1);
      drops.add(1, { connector: 'snmp_trap', listener, dropped_total: dropped, reason, ...(from ? { from } : {}) });
    };
    const source = streamSource<Message>(ctx, {
      type: 'snmp_trap',
      // A port that cannot be bound (in use, privileged) is tried a few times, then the run fails.
      reconnect: { reconnect_delay_seconds: 1, max_reconnect_attempts: 3 },
      acknowledges: false,
      maxBatch: Math.min(MAX_BATCH, c.max_queue_size),
      highWater: c.max_queue_size,
      async connect({ push }) {
        let ix: MibIndex | undefined;
        if (c.resolve_oids || c.mib_modules.length || c.mib_dirs.length) {
          try {
            const loaded = await mibIndex(c, ctx.mibs);
            if (c.resolve_oids) ix = loaded;
          } catch (e) {
            throw new SourceError((e as Error).message);
          }
        }
        let full = false;
        const rx = new TrapReceiver({
          host: c.host,
          port: c.port,
          ...(c.version !== '3' ? { community: c.community } : {}),
          ...(c.engine_id ? { engineId: c.engine_id } : {}),
          onTrap(e) {
            if (!versions.has(e.version)) return noteDrop(`SNMPv${e.version} notification; this source takes version ${c.version}`, e.source, 'version');
            if (full) return noteDrop(`the pipeline is ${c.max_queue_size} notifications behind (queue full)`, e.source, 'queue_full');
            let body: Buffer;
            try {
              body = Buffer.from(JSON.stringify(trapRecord(e, ix)));
            } catch (err) {
              return noteDrop(`cannot be described: ${(err as Error).message}`, e.source);
            }
            push({ body, meta });
          },
          // The community a sender used is not logged: a wrong one is often someone's real one.
          onDrop: (reason, from, kind) =>
            noteDrop(
              reason.startsWith('unknown community') ? 'unknown community (not the configured one)' : reason,
              from,
              kind === 'replay' ? 'replay' : undefined,
            ),
        });
        if (c.version === '3') {
          try {
            if (c.security_name !== undefined) rx.addUser(usmUser(c));
            for (const u of c.users ?? []) rx.addUser({ ...usmUser(u), ...(u.engine_id ? { engineId: u.engine_id } : {}) });
          } catch (e) {
            throw new SourceError((e as Error).message);
          }
        }
        try {
          await rx.start();
        } catch (e) {
          throw listenError(e, c.host, c.port);
        }
        const session: Session<Message> = {
          pause() {
            full = true;
          },
          resume() {
            full = false;
          },
          async close() {
            await rx.stop();
            drops.stop();
          },
        };
        return session;
      },
    });
    return source;
  },
});
