// The console's trap tools (spec doc 1 sections 2-4): a trap receiver run as a PersistentUdpService
// (its last start config persisted; a receiver that was running comes back with the console), the
// received events kept newest-first up to trap_event_limit and pushed as `trap` messages, and the
// trap/inform sender. Decisions where doc 1 says "not shown": docs/console.md (Traps).
import { isIP } from 'node:net';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { HttpError, httpError } from '../core/http-errors.js';
import type { MibIndex, MibNode } from '../mib/mib-index.js';
import type { SnmpVersion } from '../snmp/message.js';
import { TrapReceiver, type DropKind, type TrapEvent } from '../snmp/trap-receiver.js';
import { sendTrap, v1Fields } from '../snmp/trap-sender.js';
import { engineIdFrom } from '../snmp/udp.js';
import { makeUser } from '../snmp/usm.js';
import { makeVarBind, parseType, SnmpInputError, type SnmpType, type VarBind } from '../snmp/values.js';
import { Ring } from '../util/ring.js';
import type { ServiceContext } from './service-context.js';
import { PersistentUdpService } from './udp-service-base.js';
import { describeVarBind, type ParsedVarBind } from '../mib/varbinds.js';
import { peerError, resolveHost, resolveOidInput, v3User, type SnmpV3Fields } from './walk.js';

/** 162 needs root or CAP_NET_BIND_SERVICE; 1162 is the usual unprivileged choice. */
export const DEFAULT_TRAP_PORT = 1162;
export const MAX_RECEIVER_USERS = 5000;
/** Sender defaults (per request: timeout_ms, retries). */
export const SEND_TIMEOUT_MS = 3000;
export const SEND_RETRIES = 1;

const STATE_FILE = 'trap-receiver.json';

/** One USM user of the receiver; `engine_id` binds the keys to one sender engine (snmptrapd's createUser -e). */
export interface ReceiverUserInput {
  username: string;
  auth_protocol?: string;
  auth_key?: string;
  priv_protocol?: string;
  priv_key?: string;
  engine_id?: string;
}

export interface ReceiverStartInput {
  host?: string;
  port?: number;
  community?: string;
  resolve_mibs?: boolean;
  engine_id?: string;
  v3_users?: ReceiverUserInput[];
}

/** A complete receiver config: what is persisted and resumed. */
export interface ReceiverConfig {
  host: string;
  port: number;
  /** null: any community is accepted. */
  community: string | null;
  resolve_mibs: boolean;
  /** Hex; null: the receiver's own persisted engine ID. */
  engine_id: string | null;
  v3_users: ReceiverUserInput[];
}

/** A received notification as GET /api/traps/ and the `trap` message show it. */
export interface TrapEventView {
  id: number;
  time: string;
  source: string;
  version: TrapEvent['version'];
  kind: TrapEvent['kind'];
  community?: string;
  user?: string;
  engine_id?: string;
  trap_oid: string;
  trap_name?: string;
  uptime?: number;
  varbinds: ParsedVarBind[];
  v1?: { enterprise: string; agent_addr: string; generic_trap: number; specific_trap: number };
  /** Informs: the receiver answered with a Response. */
  acknowledged?: boolean;
}

export interface TrapSendRequest extends SnmpV3Fields {
  target: string;
  port?: number;
  community?: string;
  oid: string;
  varbinds?: { oid: string; type?: string; value?: unknown }[];
  version?: SnmpVersion;
  inform?: boolean;
  engine_id?: string;
  agent_addr?: string;
  uptime?: number;
  timeout_ms?: number;
  retries?: number;
}

/** The SNMP type of an object's values, from its MIB syntax (for varbinds sent without `type`). */
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
};

export class TrapService extends PersistentUdpService<ReceiverConfig, TrapReceiver> {
  private readonly events: Ring<TrapEventView>;
  private seq = 0;
  private received = 0;
  private acked = 0;
  private dropped = 0;
  private replays = 0;
  private lastDrop: { time: string; source: string; reason: string } | null = null;

  private constructor(ctx: ServiceContext) {
    super(ctx, { what: 'trap receiver', stateFile: STATE_FILE, defaultPort: DEFAULT_TRAP_PORT, keepPickedPort: true });
    this.events = new Ring(ctx.appSettings.get().trap_event_limit);
  }

  static async open(ctx: ServiceContext): Promise<TrapService> {
    const s = new TrapService(ctx);
    await s.restore();
    return s;
  }

  /** Running state as `GET /api/traps/status` and the `status` message show it. */
  status() {
    const { live: _live, engine_id, started_at, ...head } = this.commonStatus();
    const cfg = this.persisted.config;
    return {
      ...head,
      community: cfg ? cfg.community : null,
      resolve_mibs: cfg?.resolve_mibs ?? false,
      v3_users: cfg?.v3_users.length ?? 0,
      engine_id,
      started_at,
      received: this.received,
      informs_acknowledged: this.acked,
      dropped: this.dropped,
      replays: this.replays,
      last_drop: this.lastDrop,
      events: this.syncCapacity(),
      event_limit: this.ctx.appSettings.get().trap_event_limit,
      resume_on_console_start: this.persisted.resume,
    };
  }

  /** A full config from a start request: defaults filled, everything validated (422). Yields while deriving keys of many users. */
  async normalize(input: ReceiverStartInput, defaultHost: string): Promise<ReceiverConfig> {
    const cfg: ReceiverConfig = {
      host: input.host ?? defaultHost,
      port: input.port ?? DEFAULT_TRAP_PORT,
      community: input.community ?? null,
      resolve_mibs: input.resolve_mibs ?? false,
      engine_id: input.engine_id ?? null,
      v3_users: (input.v3_users ?? []).map((u) => ({ ...u })),
    };
    if (!isIP(cfg.host)) throw httpError('HTTP_INVALID', `host "${cfg.host}" must be an IPv4 or IPv6 address (0.0.0.0 or :: for every interface)`);
    if (cfg.v3_users.length > MAX_RECEIVER_USERS) throw httpError('HTTP_INVALID', `at most ${MAX_RECEIVER_USERS} v3_users, got ${cfg.v3_users.length}`);
    const hex = (h: string, what: string) => {
      try {
        return engineIdFrom(h).toString('hex');
      } catch (e) {
        throw httpError('HTTP_INVALID', `${what}: ${(e as Error).message}`);
      }
    };
    if (cfg.engine_id !== null) cfg.engine_id = hex(cfg.engine_id, 'engine_id');
    const seen = new Set<string>();
    for (const [i, u] of cfg.v3_users.entries()) {
      if (u.engine_id !== undefined) u.engine_id = hex(u.engine_id, `v3_users[${i}].engine_id`);
      const key = `${u.username}\0${u.engine_id ?? ''}`;
      if (seen.has(key))
        throw httpError('HTTP_INVALID', `v3_users[${i}]: user "${u.username}"${u.engine_id ? ` for engine ${u.engine_id}` : ''} is listed twice`);
      seen.add(key);
      try {
        // Derives (and caches) the passphrase keys: about a millisecond each.
        makeUser({ name: u.username, authProtocol: u.auth_protocol, authKey: u.auth_key, privProtocol: u.priv_protocol, privKey: u.priv_key });
      } catch (e) {
        throw httpError('HTTP_INVALID', `v3_users[${i}]: ${(e as Error).message}`);
      }
      if (i % 16 === 15) await yieldToLoop();
    }
    return cfg;
  }

  protected override create(cfg: ReceiverConfig, engineId: string, engineBoots: number): TrapReceiver {
    const rx = new TrapReceiver({
      host: cfg.host,
      port: cfg.port,
      ...(cfg.community !== null ? { community: cfg.community } : {}),
      engineId,
      engineBoots,
      onTrap: (e) => this.onTrap(e, cfg.resolve_mibs),
      onDrop: (reason, source, kind) => this.onDrop(reason, source, kind),
    });
    for (const u of cfg.v3_users)
      rx.addUser({
        name: u.username,
        authProtocol: u.auth_protocol,
        authKey: u.auth_key,
        privProtocol: u.priv_protocol,
        privKey: u.priv_key,
        engineId: u.engine_id,
      });
    return rx;
  }

  /** Counters are per start. */
  protected override onStarted(): void {
    this.received = this.acked = this.dropped = this.replays = 0;
    this.lastDrop = null;
  }

  private onTrap(t: TrapEvent, resolve: boolean): void {
    let ev: TrapEventView;
    try {
      ev = this.view(t, resolve);
    } catch (e) {
      // A notification that cannot be described is dropped and said so, never thrown into the
      // socket handler.
      return this.onDrop(`cannot be shown: ${(e as Error).message}`, t.source);
    }
    this.seq = ev.id;
    this.syncCapacity();
    this.events.push(ev);
    this.received++;
    this.ctx.stats.inc('traps', 'received');
    if (t.kind === 'inform') {
      this.acked++;
      this.ctx.stats.inc('traps', 'informs_acknowledged');
    }
    this.ctx.events.publish('trap', ev);
  }

  private view(t: TrapEvent, resolve: boolean): TrapEventView {
    const ix = resolve ? this.ctx.mibs.index() : undefined;
    return {
      id: this.seq + 1,
      time: t.time,
      source: t.source,
      version: t.version,
      kind: t.kind,
      ...(t.community !== undefined ? { community: t.community } : {}),
      ...(t.user !== undefined ? { user: t.user } : {}),
      ...(t.engineId !== undefined ? { engine_id: t.engineId } : {}),
      trap_oid: t.trapOid,
      ...(ix ? { trap_name: trapName(ix, t.trapOid) } : {}),
      ...(t.uptime !== undefined ? { uptime: t.uptime } : {}),
      varbinds: t.varbinds.map((vb) => describeVarBind(vb, ix)),
      ...(t.v1 ? { v1: { enterprise: t.v1.enterprise, agent_addr: t.v1.agentAddr, generic_trap: t.v1.genericTrap, specific_trap: t.v1.specificTrap } } : {}),
      ...(t.kind === 'inform' ? { acknowledged: true } : {}),
    };
  }

  private onDrop(reason: string, source: string, kind: DropKind = 'other'): void {
    this.dropped++;
    this.lastDrop = { time: new Date().toISOString(), source, reason };
    this.ctx.stats.inc('traps', 'dropped');
    if (kind === 'replay') {
      this.replays++;
      this.ctx.stats.inc('traps', 'replays');
    }
  }

  /** Applies a changed trap_event_limit (the oldest events go at once); the events kept. */
  private syncCapacity(): number {
    this.events.resize(this.ctx.appSettings.get().trap_event_limit);
    return this.events.size;
  }

  /** GET /api/traps/: newest first, at most `limit`. */
  list(limit?: number) {
    this.syncCapacity();
    const traps = this.events.newest(limit);
    return { total: this.events.size, count: traps.length, traps };
  }

  /** DELETE /api/traps/. */
  clear(): { cleared: number } {
    return { cleared: this.events.clear() };
  }

  /** POST /api/traps/send. */
  async send(req: TrapSendRequest) {
    const { ctx } = this;
    const version = req.version ?? '2c';
    const port = req.port ?? 162;
    const inform = req.inform ?? false;
    const timeoutMs = req.timeout_ms ?? SEND_TIMEOUT_MS;
    const retries = req.retries ?? SEND_RETRIES;
    const ix = ctx.mibs.index();
    const trapOid = resolveOidInput(req.oid, ix, 'oid');
    const varbinds = (req.varbinds ?? []).map((v, i) => varbindFromInput(v, i, ix));
    const user = v3User(req, version);
    if (inform && version === '1') throw httpError('HTTP_INVALID', 'SNMPv1 has no informs; use version "2c" or "3"');
    let engineId: string | undefined;
    if (req.engine_id !== undefined) {
      try {
        engineId = engineIdFrom(req.engine_id).toString('hex');
      } catch (e) {
        throw httpError('HTTP_INVALID', `engine_id: ${(e as Error).message}`);
      }
    }
    const uptime = req.uptime ?? Math.floor(process.uptime() * 100) >>> 0;
    const agentAddr = req.agent_addr ?? '127.0.0.1';
    if (isIP(agentAddr) !== 4) throw httpError('HTTP_INVALID', `agent_addr "${agentAddr}" is not an IPv4 address`);
    const host = await resolveHost(req.target);
    const started = performance.now();
    let acknowledged: boolean | undefined;
    try {
      const r = await sendTrap({
        host,
        port,
        version,
        community: req.community ?? 'public',
        ...(user ? { user } : {}),
        contextName: req.context_name,
        timeoutMs,
        retries,
        trapOid,
        varbinds,
        inform,
        uptime,
        agentAddr,
        ...(engineId ? { engineId } : {}),
      });
      acknowledged = r.acknowledged;
    } catch (e) {
      ctx.stats.inc('traps', 'send_errors');
      const err = peerError(e, { host: req.target, port, version, timeoutMs, retries, what: 'a trap receiver' });
      if (err instanceof HttpError && err.statusCode === 504) throw httpError('HTTP_SNMP_TIMEOUT', `inform not acknowledged: ${err.message}`);
      throw err;
    }
    ctx.stats.inc('traps', 'sent');
    const v1 = version === '1' ? v1Fields(trapOid, agentAddr, uptime) : undefined;
    return {
      sent: true,
      target: req.target,
      port,
      version,
      kind: inform ? ('inform' as const) : ('trap' as const),
      trap_oid: trapOid,
      trap_name: trapName(ix, trapOid),
      uptime,
      varbinds: varbinds.map((vb) => describeVarBind(vb, ix)),
      ...(v1 ? { v1: { enterprise: v1.enterprise, agent_addr: v1.agentAddr, generic_trap: v1.genericTrap, specific_trap: v1.specificTrap } } : {}),
      ...(inform ? { acknowledged: !!acknowledged } : {}),
      duration_ms: Math.round(performance.now() - started),
    };
  }
}

function trapName(ix: MibIndex, oid: string): string {
  return ix.toSymbolic(oid).symbolic;
}

/**
 * A varbind of a send request: OID numeric or a MIB name; `type` may be left out when the MIB
 * gives the object's syntax, and an enumerated INTEGER may be given by label. 422 names the index.
 */
function varbindFromInput(v: { oid: string; type?: string; value?: unknown }, i: number, ix: MibIndex): VarBind {
  const oid = resolveOidInput(v.oid, ix, `varbinds[${i}].oid`);
  const r = ix.toSymbolic(oid);
  const node: MibNode | undefined = r.node?.syntax && (r.node.kind === 'scalar' || r.node.kind === 'column') ? r.node : undefined;
  let type = v.type;
  if (type === undefined) {
    type = node ? TYPE_OF_BASE[node.syntax!.base] : undefined;
    if (!type) throw httpError('HTTP_INVALID', `varbinds[${i}] (${r.symbolic}): give a type; the loaded MIBs do not define this object's syntax`);
  }
  let value = v.value;
  const enums = node?.syntax?.enums;
  // A label stands for its number only where the value is sent as an INTEGER.
  const integer = v.type === undefined || parseTypeOrNull(type) === 'Integer32';
  if (typeof value === 'string' && enums && integer && node!.syntax!.base !== 'BITS' && Object.hasOwn(enums, value)) value = enums[value];
  try {
    return makeVarBind(oid, type, value);
  } catch (e) {
    if (e instanceof SnmpInputError) throw httpError('HTTP_INVALID', `varbinds[${i}] (${r.symbolic}): ${e.message}`);
    throw e;
  }
}

function parseTypeOrNull(name: string): string | null {
  try {
    return parseType(name);
  } catch {
    return null; // makeVarBind reports the unknown type
  }
}
