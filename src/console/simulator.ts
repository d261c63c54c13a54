// The console's SNMP agent simulator (spec doc 1 sections 2-4): one SnmpAgent started, stopped and
// restarted with its last start config persisted (PersistentUdpService: a simulator that was
// running comes back with the console), custom OID overrides persisted and applied live, and an
// activity log kept in a ring buffer and pushed over the WebSocket. Decisions: docs/console.md (Simulator).
import { isIP } from 'node:net';
import { join } from 'node:path';
import { httpError } from '../core/http-errors.js';
import { SnmpAgent, type ActivityEntry, type BulkLimits, type OidOverride } from '../snmp/agent.js';
import type { Settings } from '../settings.js';
import { engineIdFrom } from '../snmp/udp.js';
import { makeUser, type UsmUser } from '../snmp/usm.js';
import { makeVarBind, parseType, SnmpInputError } from '../snmp/values.js';
import { readJsonFile } from '../util/durable.js';
import { Ring } from '../util/ring.js';
import type { ServiceContext } from './service-context.js';
import { PersistentUdpService } from './udp-service-base.js';

/** Default UDP port: 161 needs root or CAP_NET_BIND_SERVICE; 1161 is the usual unprivileged choice. */
export const DEFAULT_SIMULATOR_PORT = 1161;
export const DEFAULT_COMMUNITY = 'public';
/** At most this many overrides (each one is a row of the served table). */
export const MAX_OVERRIDES = 10000;
/** At most this many simulator_log pushes a second; the rest are coalesced (see onActivity). */
export const LOG_PUSHES_PER_SECOND = 20;

/** The GETBULK caps of the simulator and the fleet (docs/console.md). */
export const bulkLimits = (s: Settings): BulkLimits => ({ maxVarbinds: s.SIMULATOR_BULK_MAX_VARBINDS, maxAmplification: s.SIMULATOR_BULK_MAX_AMPLIFICATION });

/** One SNMPv3 user as the start request gives it (keys are passphrases, at least 8 characters). */
export interface V3UserInput {
  username: string;
  auth_protocol?: string;
  auth_key?: string;
  priv_protocol?: string;
  priv_key?: string;
}

export interface StartInput {
  host?: string;
  port?: number;
  community?: string;
  write_community?: string;
  engine_id?: string;
  v3_users?: V3UserInput[];
}

/** A complete start config: what is persisted and reused by restart. */
export interface SimulatorConfig {
  host: string;
  port: number;
  community: string;
  write_community: string | null;
  /** Hex; null: the simulator's own persisted engine ID. */
  engine_id: string | null;
  v3_users: V3UserInput[];
}

/** An activity entry as the log and the WebSocket show it. */
export type LogEntry = ActivityEntry & { id: number; skipped?: number };

const STATE_FILE = 'simulator.json';
const OVERRIDES_FILE = 'simulator-overrides.json';
/** Types an override cannot serve: they are not object values. */
const NOT_SERVABLE = new Set(['Null', 'NoSuchObject', 'NoSuchInstance', 'EndOfMibView']);

/** Validates overrides; 422 naming the index (0-based, as in the request) and the OID. Returns them with OIDs normalised. */
export function checkOverrides(list: OidOverride[]): OidOverride[] {
  if (list.length > MAX_OVERRIDES) throw httpError('HTTP_INVALID', `at most ${MAX_OVERRIDES} overrides, got ${list.length}`);
  const seen = new Map<string, number>();
  return list.map((o, i) => {
    try {
      if (NOT_SERVABLE.has(parseType(o.type)))
        throw new SnmpInputError(
          `type ${o.type} is not a value an agent can serve; use one of Integer32, OctetString, hex, ObjectIdentifier, IpAddress, Counter32, Gauge32, TimeTicks, Opaque, Counter64`,
        );
      // The agent builds its values with the same function, so what passes here it can serve.
      const { oid } = makeVarBind(o.oid, o.type, o.value);
      const dup = seen.get(oid);
      if (dup !== undefined) throw new SnmpInputError(`OID ${oid} is already overridden by overrides[${dup}]`);
      seen.set(oid, i);
      return { oid, type: o.type, value: o.value };
    } catch (e) {
      if (!(e instanceof SnmpInputError)) throw e;
      throw httpError('HTTP_INVALID', `overrides[${i}] (${String(o.oid)}): ${e.message}`);
    }
  });
}

export class SimulatorService extends PersistentUdpService<SimulatorConfig, SnmpAgent> {
  private overrides: OidOverride[] = [];
  private readonly log: Ring<LogEntry>;
  private seq = 0;
  // WebSocket push budget: LOG_PUSHES_PER_SECOND per one-second window, the rest coalesced.
  private windowStart = 0;
  private pushed = 0;
  private held = 0;
  private newestHeld: LogEntry | undefined;
  private flushTimer: NodeJS.Timeout | undefined;

  private constructor(ctx: ServiceContext) {
    super(ctx, { what: 'simulator', stateFile: STATE_FILE, defaultPort: DEFAULT_SIMULATOR_PORT, restartable: true });
    this.log = new Ring<LogEntry>(ctx.appSettings.get().simulator_log_limit);
  }

  static async open(ctx: ServiceContext): Promise<SimulatorService> {
    const s = new SimulatorService(ctx);
    // Before the resume: a resumed agent serves them at once.
    await s.loadOverrides();
    await s.restore();
    return s;
  }

  private async loadOverrides(): Promise<void> {
    const { ctx } = this;
    try {
      const ov = await readJsonFile<{ overrides: OidOverride[] }>(join(ctx.dir, OVERRIDES_FILE));
      if (ov) this.overrides = checkOverrides(ov.overrides ?? []);
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message, file: join(ctx.dir, OVERRIDES_FILE) }, 'simulator overrides unreadable; serving none until saved again');
    }
  }

  /** Running state as `GET /api/simulator/status` shows it. */
  status() {
    this.syncCapacity(); // a lowered simulator_log_limit drops the oldest entries at once
    const { live, engine_id, started_at, ...head } = this.commonStatus();
    const cfg = this.persisted.config;
    const users = (cfg?.v3_users ?? []).map((u) => ({
      username: u.username,
      auth_protocol: u.auth_key || u.auth_protocol ? (u.auth_protocol ?? 'SHA') : null,
      priv_protocol: u.priv_key || u.priv_protocol ? (u.priv_protocol ?? 'AES128') : null,
    }));
    return {
      ...head,
      community: cfg?.community ?? DEFAULT_COMMUNITY,
      writable: !!cfg?.write_community,
      versions: users.length ? ['1', '2c', '3'] : ['1', '2c'],
      v3_users: users,
      engine_id,
      started_at,
      uptime_s: live ? Math.floor((Date.now() - this.startedAt!.getTime()) / 1000) : null,
      oids: live ? live.size : null,
      overrides: this.overrides.length,
      log_entries: this.log.size,
      resume_on_console_start: this.persisted.resume,
    };
  }

  /** A full config from a start request: defaults filled, everything validated (422). */
  normalize(input: StartInput, defaultHost: string): SimulatorConfig {
    const cfg: SimulatorConfig = {
      host: input.host ?? defaultHost,
      port: input.port ?? DEFAULT_SIMULATOR_PORT,
      community: input.community ?? DEFAULT_COMMUNITY,
      write_community: input.write_community ?? null,
      engine_id: input.engine_id ? input.engine_id.replace(/^0x/i, '').toLowerCase() : null,
      v3_users: (input.v3_users ?? []).map((u) => ({ ...u })),
    };
    if (!isIP(cfg.host)) throw httpError('HTTP_INVALID', `host "${cfg.host}" must be an IPv4 or IPv6 address (0.0.0.0 or :: for every interface)`);
    if (cfg.write_community !== null && cfg.write_community === cfg.community)
      throw httpError('HTTP_INVALID', 'write_community must differ from community (the read community would be allowed to SET)');
    if (cfg.engine_id !== null) {
      try {
        engineIdFrom(cfg.engine_id);
      } catch (e) {
        throw httpError('HTTP_INVALID', `engine_id: ${(e as Error).message}`);
      }
    }
    const names = new Set<string>();
    cfg.v3_users.forEach((u, i) => {
      if (names.has(u.username)) throw httpError('HTTP_INVALID', `v3_users[${i}]: user "${u.username}" is listed twice`);
      names.add(u.username);
      this.user(u, i);
    });
    return cfg;
  }

  private user(u: V3UserInput, i: number): UsmUser {
    try {
      return makeUser({ name: u.username, authProtocol: u.auth_protocol, authKey: u.auth_key, privProtocol: u.priv_protocol, privKey: u.priv_key });
    } catch (e) {
      throw httpError('HTTP_INVALID', `v3_users[${i}]: ${(e as Error).message}`);
    }
  }

  protected override create(cfg: SimulatorConfig, engineId: string, engineBoots: number): SnmpAgent {
    return new SnmpAgent({
      host: cfg.host,
      port: cfg.port,
      community: cfg.community,
      ...(cfg.write_community ? { writeCommunity: cfg.write_community } : {}),
      users: cfg.v3_users.map((u) => ({
        name: u.username,
        authProtocol: u.auth_protocol,
        authKey: u.auth_key,
        privProtocol: u.priv_protocol,
        privKey: u.priv_key,
      })),
      engineId,
      engineBoots,
      overrides: this.overrides,
      bulk: bulkLimits(this.ctx.settings),
      onActivity: this.onActivity,
    });
  }

  getOverrides(): OidOverride[] {
    return this.overrides.map((o) => ({ ...o }));
  }

  /** Validates (422, nothing saved), persists, and applies to a running agent at once. */
  async setOverrides(list: OidOverride[]): Promise<boolean> {
    const checked = checkOverrides(list);
    await this.save(OVERRIDES_FILE, { overrides: checked });
    this.overrides = checked;
    const live = this.server !== undefined;
    this.server?.setOverrides(checked);
    this.ctx.publishStatus();
    return live;
  }

  /** Newest first. */
  logs(limit?: number): { entries: LogEntry[]; total: number; capacity: number } {
    const capacity = this.syncCapacity();
    return { entries: this.log.newest(limit), total: this.log.size, capacity };
  }

  clearLogs(): number {
    this.syncCapacity();
    return this.log.clear();
  }

  private syncCapacity(): number {
    const cap = this.ctx.appSettings.get().simulator_log_limit;
    this.log.resize(cap);
    return cap;
  }

  // The agent's hot path: one call per message. No JSON, no array shifting; counters, a ring write
  // and, within the push budget, one event.
  private readonly onActivity = (a: ActivityEntry): void => {
    const e = a as LogEntry;
    e.id = ++this.seq;
    const { stats } = this.ctx;
    stats.inc('simulator', 'requests');
    const r = e.request;
    if (r === 'get' || r === 'getnext' || r === 'getbulk' || r === 'set') stats.inc('simulator', r);
    // v3 discovery and time synchronisation are normal protocol steps, not errors.
    if (e.error && e.error !== 'engine discovery' && e.error !== 'time sync') stats.inc('simulator', 'errors');
    const now = Date.now();
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.pushed = 0;
      // The limit can change at any time (POST /api/settings/app): looked at once a window, not per message.
      this.syncCapacity();
    }
    this.log.push(e);
    if (this.pushed < LOG_PUSHES_PER_SECOND && !this.held) {
      this.pushed++;
      this.ctx.events.publish('simulator_log', e);
      return;
    }
    // Over budget: hold back; at the end of the window push the newest with how many were skipped.
    this.held++;
    this.newestHeld = e;
    if (!this.flushTimer) {
      this.flushTimer = setTimeout(this.flush, Math.max(1, this.windowStart + 1000 - now));
      this.flushTimer.unref();
    }
  };

  private readonly flush = (): void => {
    this.flushTimer = undefined;
    const e = this.newestHeld;
    if (!e) return;
    this.ctx.events.publish('simulator_log', { ...e, skipped: this.held - 1 });
    this.held = 0;
    this.newestHeld = undefined;
    this.windowStart = Date.now();
    this.pushed = 1;
  };

  override async close(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await super.close();
  }
}
