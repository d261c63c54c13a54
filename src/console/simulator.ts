// The console's SNMP agent simulator (spec doc 1 sections 2-4): one SnmpAgent started, stopped and
// restarted through RunState, custom OID overrides persisted and applied live, the last start
// config persisted (a simulator that was running comes back with the console), and an activity
// log kept in a ring buffer and pushed over the WebSocket. Decisions: docs/console.md (Simulator).
import { isIP } from 'node:net';
import { join } from 'node:path';
import { ApiError } from '../api/deps.js';
import { SnmpAgent, type ActivityEntry, type OidOverride } from '../snmp/agent.js';
import { engineIdFrom } from '../snmp/udp.js';
import { makeUser, type UsmUser } from '../snmp/usm.js';
import { coerceValue, parseOid, parseType, SnmpInputError } from '../snmp/values.js';
import { readJsonFile, writeFileDurably } from '../util/durable.js';
import type { ServiceContext } from './deps.js';
import { RunState } from './service-state.js';

/** Default UDP port: 161 needs root or CAP_NET_BIND_SERVICE; 1161 is the usual unprivileged choice. */
export const DEFAULT_SIMULATOR_PORT = 1161;
export const DEFAULT_COMMUNITY = 'public';
/** At most this many overrides (each one is a row of the served table). */
export const MAX_OVERRIDES = 10000;
/** At most this many simulator_log pushes a second; the rest are coalesced (see onActivity). */
export const LOG_PUSHES_PER_SECOND = 20;

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

interface PersistedState {
  config: SimulatorConfig | null;
  /** True while the operator wants it running: it is started again when the console starts. */
  resume: boolean;
  /** Generated at the first start without engine_id, then kept (like snmpd's persistent engineID). */
  engine_id: string | null;
}

const STATE_FILE = 'simulator.json';
const OVERRIDES_FILE = 'simulator-overrides.json';
/** Types an override cannot serve: they are not object values. */
const NOT_SERVABLE = new Set(['Null', 'NoSuchObject', 'NoSuchInstance', 'EndOfMibView']);

/**
 * The bind address when a start request names none: SVC_HOST (where the console listens, so the
 * simulator is reachable where the console is) when it is an IP address, else loopback.
 */
export function defaultSimulatorHost(consoleHost: string): string {
  return isIP(consoleHost) ? consoleHost : '127.0.0.1';
}

/** Validates overrides; 422 naming the index (0-based, as in the request) and the OID. Returns them with OIDs normalised. */
export function checkOverrides(list: OidOverride[]): OidOverride[] {
  if (list.length > MAX_OVERRIDES) throw new ApiError(422, `at most ${MAX_OVERRIDES} overrides, got ${list.length}`);
  const seen = new Map<string, number>();
  return list.map((o, i) => {
    try {
      const oid = parseOid(o.oid);
      const type = parseType(o.type);
      if (NOT_SERVABLE.has(type)) throw new SnmpInputError(`type ${o.type} is not a value an agent can serve; use one of Integer32, OctetString, hex, ObjectIdentifier, IpAddress, Counter32, Gauge32, TimeTicks, Opaque, Counter64`);
      coerceValue(type, o.value, oid, /^(hex|hexstring|x)$/i.test(o.type.trim()));
      const dup = seen.get(oid);
      if (dup !== undefined) throw new SnmpInputError(`OID ${oid} is already overridden by overrides[${dup}]`);
      seen.set(oid, i);
      return { oid, type: o.type, value: o.value };
    } catch (e) {
      if (!(e instanceof SnmpInputError)) throw e;
      throw new ApiError(422, `overrides[${i}] (${String(o.oid)}): ${e.message}`);
    }
  });
}

/** Fixed-capacity ring of entries, oldest overwritten; O(1) push, no shifting. */
class Ring {
  private buf: (LogEntry | undefined)[];
  private head = 0; // next write
  private count = 0;

  constructor(private cap: number) {
    this.buf = new Array<LogEntry | undefined>(cap);
  }

  get size(): number {
    return this.count;
  }

  push(e: LogEntry): void {
    this.buf[this.head] = e;
    this.head = (this.head + 1) % this.cap;
    if (this.count < this.cap) this.count++;
  }

  /** Newest first, at most n. */
  newest(n = this.count): LogEntry[] {
    const out: LogEntry[] = [];
    for (let k = 0, i = this.head; k < Math.min(n, this.count); k++) {
      i = (i - 1 + this.cap) % this.cap;
      out.push(this.buf[i]!);
    }
    return out;
  }

  /** Changes the capacity, keeping the newest entries. */
  resize(cap: number): void {
    if (cap === this.cap) return;
    const keep = this.newest(cap).reverse();
    this.cap = cap;
    this.buf = new Array<LogEntry | undefined>(cap);
    this.head = 0;
    this.count = 0;
    for (const e of keep) this.push(e);
  }

  clear(): number {
    const n = this.count;
    this.buf = new Array<LogEntry | undefined>(this.cap);
    this.head = 0;
    this.count = 0;
    return n;
  }
}

export class SimulatorService {
  private readonly run: RunState;
  private agent: SnmpAgent | undefined;
  private startedAt: Date | undefined;
  private persisted: PersistedState = { config: null, resume: false, engine_id: null };
  private overrides: OidOverride[] = [];
  private readonly log: Ring;
  private seq = 0;
  // WebSocket push budget: LOG_PUSHES_PER_SECOND per one-second window, the rest coalesced.
  private windowStart = 0;
  private pushed = 0;
  private held = 0;
  private newestHeld: LogEntry | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private writes: Promise<void> = Promise.resolve();

  private constructor(readonly ctx: ServiceContext) {
    // publishStatus reads the console's services, which do not exist yet while the console starts
    // (the resume below); nobody is connected then, and full_state carries the state.
    this.run = new RunState('simulator', () => {
      try {
        ctx.publishStatus();
      } catch {
        /* console still starting */
      }
    });
    this.log = new Ring(ctx.appSettings.get().simulator_log_limit);
  }

  static async open(ctx: ServiceContext): Promise<SimulatorService> {
    const s = new SimulatorService(ctx);
    await s.load();
    if (s.persisted.resume && s.persisted.config) {
      // It was running when the console stopped: start it again, as snmpd comes back after a
      // reboot. A failure (port taken meanwhile) leaves state error; the console starts anyway.
      try {
        await s.startWith(s.persisted.config, false);
        ctx.log.info({ host: s.persisted.config.host, port: s.agent?.port }, 'simulator resumed');
      } catch (e) {
        ctx.log.warn({ err: (e as Error).message }, 'simulator could not be resumed');
      }
    }
    return s;
  }

  private async load(): Promise<void> {
    const { ctx } = this;
    try {
      const st = await readJsonFile<PersistedState>(join(ctx.dir, STATE_FILE));
      if (st) this.persisted = { config: st.config ?? null, resume: !!st.resume, engine_id: st.engine_id ?? null };
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message, file: join(ctx.dir, STATE_FILE) }, 'simulator state unreadable; starting from defaults');
    }
    try {
      const ov = await readJsonFile<{ overrides: OidOverride[] }>(join(ctx.dir, OVERRIDES_FILE));
      if (ov) this.overrides = checkOverrides(ov.overrides ?? []);
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message, file: join(ctx.dir, OVERRIDES_FILE) }, 'simulator overrides unreadable; serving none until saved again');
    }
  }

  /** Durable writes, one at a time (so they never interleave). */
  private save(file: string, data: unknown): Promise<void> {
    const next = this.writes.then(() => writeFileDurably(join(this.ctx.dir, file), JSON.stringify(data, null, 2)));
    this.writes = next.catch(() => undefined);
    return next;
  }

  private saveState(): Promise<void> {
    return this.save(STATE_FILE, this.persisted);
  }

  /** Running state as `GET /api/simulator/status` shows it. */
  status() {
    const cfg = this.persisted.config;
    const a = this.agent;
    const running = this.run.state === 'running' && a !== undefined;
    const users = (cfg?.v3_users ?? []).map((u) => ({
      username: u.username,
      auth_protocol: u.auth_key || u.auth_protocol ? (u.auth_protocol ?? 'SHA') : null,
      priv_protocol: u.priv_key || u.priv_protocol ? (u.priv_protocol ?? 'AES128') : null,
    }));
    return {
      ...this.run.view(),
      host: cfg?.host ?? null,
      port: running ? a.port : (cfg?.port ?? DEFAULT_SIMULATOR_PORT),
      community: cfg?.community ?? DEFAULT_COMMUNITY,
      writable: !!cfg?.write_community,
      versions: users.length ? ['1', '2c', '3'] : ['1', '2c'],
      v3_users: users,
      engine_id: running ? a.engineId.toString('hex') : (cfg?.engine_id ?? this.persisted.engine_id),
      started_at: running ? this.startedAt!.toISOString() : null,
      uptime_s: running ? Math.floor((Date.now() - this.startedAt!.getTime()) / 1000) : null,
      oids: running ? a.size : null,
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
    if (!isIP(cfg.host)) throw new ApiError(422, `host "${cfg.host}" must be an IPv4 or IPv6 address (0.0.0.0 or :: for every interface)`);
    if (cfg.write_community !== null && cfg.write_community === cfg.community) throw new ApiError(422, 'write_community must differ from community (the read community would be allowed to SET)');
    if (cfg.engine_id !== null) {
      try {
        engineIdFrom(cfg.engine_id);
      } catch (e) {
        throw new ApiError(422, `engine_id: ${(e as Error).message}`);
      }
    }
    const names = new Set<string>();
    cfg.v3_users.forEach((u, i) => {
      if (names.has(u.username)) throw new ApiError(422, `v3_users[${i}]: user "${u.username}" is listed twice`);
      names.add(u.username);
      this.user(u, i);
    });
    return cfg;
  }

  private user(u: V3UserInput, i: number): UsmUser {
    try {
      return makeUser({ name: u.username, authProtocol: u.auth_protocol, authKey: u.auth_key, privProtocol: u.priv_protocol, privKey: u.priv_key });
    } catch (e) {
      throw new ApiError(422, `v3_users[${i}]: ${(e as Error).message}`);
    }
  }

  /** POST /api/simulator/start: 409 when running; bind errors (409 port in use, 403 privileged port) leave state error. */
  async start(cfg: SimulatorConfig): Promise<void> {
    await this.startWith(cfg, true);
  }

  private async startWith(cfg: SimulatorConfig, persist: boolean): Promise<void> {
    let engineId = cfg.engine_id ?? this.persisted.engine_id;
    if (!engineId) engineId = this.persisted.engine_id = engineIdFrom(undefined).toString('hex');
    try {
      await this.run.start(async () => {
        // Kept even when the bind fails: restart retries what the operator asked for last.
        this.persisted.config = cfg;
        // Built here so that a config that no longer validates (a hand-edited state file) ends in state error too.
        const agent = new SnmpAgent({
          host: cfg.host,
          port: cfg.port,
          community: cfg.community,
          ...(cfg.write_community ? { writeCommunity: cfg.write_community } : {}),
          users: cfg.v3_users.map((u) => ({ name: u.username, authProtocol: u.auth_protocol, authKey: u.auth_key, privProtocol: u.priv_protocol, privKey: u.priv_key })),
          engineId,
          overrides: this.overrides,
          onActivity: this.onActivity,
        });
        await agent.start();
        this.agent = agent;
        this.startedAt = new Date();
      });
    } catch (e) {
      if (persist && !(e instanceof ApiError)) {
        // A failed start is not something to resume.
        this.persisted.resume = false;
        await this.saveState();
      }
      throw e;
    }
    if (persist) this.persisted.resume = true;
    await this.saveState();
  }

  /** POST /api/simulator/stop; the simulator then stays stopped across console restarts. */
  async stop(): Promise<void> {
    await this.stopAgent();
    this.persisted.resume = false;
    await this.saveState();
  }

  private async stopAgent(): Promise<void> {
    await this.run.stop(async () => {
      const a = this.agent;
      this.agent = undefined;
      this.startedAt = undefined;
      await a?.stop();
    });
  }

  /** POST /api/simulator/restart: stop when running, then start with the last config (or `defaults` when there is none). */
  async restart(defaults: SimulatorConfig): Promise<void> {
    const cfg = this.persisted.config ?? defaults;
    await this.stopAgent();
    await this.startWith(cfg, true);
  }

  getOverrides(): OidOverride[] {
    return this.overrides.map((o) => ({ ...o }));
  }

  /** Validates (422, nothing saved), persists, and applies to a running agent at once. */
  async setOverrides(list: OidOverride[]): Promise<boolean> {
    const checked = checkOverrides(list);
    await this.save(OVERRIDES_FILE, { overrides: checked });
    this.overrides = checked;
    const live = this.agent !== undefined;
    this.agent?.setOverrides(checked);
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

  async close(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    // Not a stop by the operator: `resume` stays as it is, so the simulator comes back with the console.
    await this.stopAgent();
    await this.writes;
  }
}
