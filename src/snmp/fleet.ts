// A fleet of simulated agents in one process (issue 14): N SnmpAgents on N UDP ports (consecutive
// from a base port, or ephemeral), each a different device: its own sysName (sim-0042), its own
// interface count, ifTable/ifXTable counters moving at its own rate and wrapping at 2^32, its own
// SNMPv3 engine ID (users shared). Everything is derived from a seed and the agent's index, so a
// fleet is the same every time. Memory: agents with the same interface count share one table
// (agentTable); values are computed on read from time and a small per-agent context, so 1,000
// agents of ~25 interfaces take a few tens of MB. Decisions: docs/snmp.md (Fleet).
import { createHash } from 'node:crypto';
import { SnmpAgent, agentTable, type ActivityEntry, type AgentTable, type BulkLimits } from './agent.js';
import { defaultDevice, type MibEntry } from './device.js';
import { engineBootsFrom } from './udp.js';
import { makeUser, type UsmUserConfig } from './usm.js';
import { SnmpInputError } from './values.js';

export interface FleetOptions {
  /** Number of agents, 1..MAX_FLEET_AGENTS. */
  agents: number;
  /** Bind address (default 127.0.0.1). */
  host?: string;
  /** Agent i listens on basePort + i; 0 (default): each agent on a free port of its own. */
  basePort?: number;
  /** Fewest interfaces an agent has (default 20). */
  interfaces?: number;
  /** Agent i has interfaces + 0..spread interfaces (default 8: 20..28). */
  interfaceSpread?: number;
  /** v1/v2c read community of every agent (default public). */
  community?: string;
  /** Everything that varies between agents derives from it (default 1). */
  seed?: number;
  /** SNMPv3 users, the same on every agent (keys localised to each agent's engine ID). */
  users?: UsmUserConfig[];
  /** sysName prefix (default `sim-`): agent 42 is sim-0042. */
  namePrefix?: string;
  /** Share of agents whose counters run `fastFactor` times faster (default 0.1). */
  fastShare?: number;
  /** Speed-up of the fast agents (default 100: a 1G port's Counter32 wraps in under a second, a 100M one in ~9 s). */
  fastFactor?: number;
  /** snmpEngineBoots of every agent (default 1). */
  engineBoots?: number;
  /** Every message an agent received (the agent's index and its activity entry). Leave unset for speed. */
  onActivity?: (agent: number, entry: ActivityEntry) => void;
  /** Caps of every agent's GETBULK answers (default DEFAULT_BULK_LIMITS). */
  bulk?: BulkLimits;
}

/** What differs between agents that share a table: handed to its value functions. */
export interface FleetAgentContext {
  index: number;
  sysName: Buffer;
  sysDescr: Buffer;
  engineId: Buffer;
  engineBoots: number;
  /** Counter speed (1 = the default device's rates, ~40 % of line rate). */
  speed: number;
  /** Seconds of traffic counted before the start (so agents do not all start at the same values). */
  phase: number;
  /** Seconds the device had been up at the start (sysUpTime). */
  uptime: number;
}

/** One agent as `Fleet.agents()` describes it. */
export interface FleetAgentInfo {
  index: number;
  host: string;
  /** The bound port while running, else the configured one (0: ephemeral). */
  port: number;
  sysName: string;
  interfaces: number;
  engineId: string;
  speed: number;
  fast: boolean;
}

export const MAX_FLEET_AGENTS = 10000;
export const MAX_FLEET_INTERFACES = 1000;

const TWO32 = 2 ** 32;
const SYS_DESCR = '1.3.6.1.2.1.1.1.0';
const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';
const SYS_NAME = '1.3.6.1.2.1.1.5.0';
/** SNMP-FRAMEWORK-MIB snmpEngine group: snmpEngineID, Boots, Time, MaxMessageSize. */
const SNMP_ENGINE = '1.3.6.1.6.3.10.2.1';

/** A 32-bit integer hash (lowbias32): the fleet's only source of variety. */
function mix(a: number): number {
  a = Math.imul(a ^ (a >>> 16), 0x7feb352d);
  a = Math.imul(a ^ (a >>> 15), 0x846ca68b);
  return (a ^ (a >>> 16)) >>> 0;
}

/** A number in [0, 1) fixed by seed, agent and what it is for. */
const unit = (seed: number, i: number, what: number): number => mix(mix(mix(seed >>> 0) ^ i) ^ what) / TWO32;

/** Engine ID of agent i: net-snmp's enterprise (8072), format 5 (octets): 4 bytes of the seed's hash, then i. */
export function fleetEngineId(seed: number, i: number): Buffer {
  const id = Buffer.alloc(13);
  Buffer.from('80001f8805', 'hex').copy(id, 0);
  createHash('sha256').update(`svc-fleet:${seed}`).digest().copy(id, 5, 0, 4);
  id.writeUInt32BE(i, 9);
  return id;
}

/**
 * The table agents with `n` interfaces share: the default device with sysName, sysDescr and
 * sysUpTime taken from the agent's context, every moving value on the agent's own clock
 * (phase + elapsed x speed), and the snmpEngine group.
 */
export function fleetTable(n: number): AgentTable {
  const ctxOf = (c: unknown) => c as FleetAgentContext;
  const rows: MibEntry[] = defaultDevice({ interfaces: n }).map((e) => {
    if (e.oid === SYS_DESCR) return { ...e, value: (_s: number, c: unknown) => ctxOf(c).sysDescr };
    if (e.oid === SYS_NAME) return { ...e, value: (_s: number, c: unknown) => ctxOf(c).sysName };
    if (e.oid === SYS_UPTIME) return { ...e, value: (s: number, c: unknown) => Math.floor((ctxOf(c).uptime + s) * 100) % TWO32 };
    const f = e.value;
    if (typeof f !== 'function') return e;
    return { ...e, value: (s: number, c: unknown) => f(ctxOf(c).phase + s * ctxOf(c).speed) };
  });
  rows.push(
    { oid: `${SNMP_ENGINE}.1.0`, type: 'OctetString', value: (_s: number, c: unknown) => ctxOf(c).engineId },
    { oid: `${SNMP_ENGINE}.2.0`, type: 'Integer32', value: (_s: number, c: unknown) => ctxOf(c).engineBoots },
    { oid: `${SNMP_ENGINE}.3.0`, type: 'Integer32', value: (s: number) => Math.floor(s) },
    { oid: `${SNMP_ENGINE}.4.0`, type: 'Integer32', value: 65507 },
  );
  return agentTable(rows);
}

const int = (v: number | undefined, dflt: number, min: number, max: number, what: string): number => {
  const x = v ?? dflt;
  if (!Number.isInteger(x) || x < min || x > max) throw new SnmpInputError(`${what} must be an integer ${min}..${max}, got ${x}`);
  return x;
};

export class Fleet {
  readonly size: number;
  readonly host: string;
  readonly basePort: number;
  readonly community: string;
  readonly seed: number;
  private readonly minInterfaces: number;
  private readonly spread: number;
  private readonly contexts: FleetAgentContext[] = [];
  private readonly ifCounts: number[] = [];
  private readonly fastAgents: boolean[] = [];
  private readonly tables = new Map<number, AgentTable>();
  private servers: SnmpAgent[] = [];
  private startedAt: Date | undefined;

  /** Validates everything (SnmpInputError) and derives every agent; binds nothing (see start). */
  constructor(private readonly opts: FleetOptions) {
    this.size = int(opts.agents, 0, 1, MAX_FLEET_AGENTS, 'agents');
    this.host = opts.host ?? '127.0.0.1';
    this.basePort = int(opts.basePort, 0, 0, 65535, 'base port');
    if (this.basePort && this.basePort + this.size - 1 > 65535)
      throw new SnmpInputError(`base port ${this.basePort} + ${this.size} agents goes past port 65535; lower the base port or the number of agents`);
    this.minInterfaces = int(opts.interfaces, 20, 1, MAX_FLEET_INTERFACES, 'interfaces');
    this.spread = int(opts.interfaceSpread, 8, 0, MAX_FLEET_INTERFACES - this.minInterfaces, 'interface spread');
    this.community = opts.community ?? 'public';
    if (!this.community) throw new SnmpInputError('community must not be empty');
    this.seed = int(opts.seed, 1, 0, 0xffffffff, 'seed');
    const boots = engineBootsFrom(opts.engineBoots);
    const fastShare = opts.fastShare ?? 0.1;
    if (!(fastShare >= 0 && fastShare <= 1)) throw new SnmpInputError(`fast share must be 0..1, got ${fastShare}`);
    const fastFactor = opts.fastFactor ?? 100;
    if (!(fastFactor >= 1 && fastFactor <= 10000)) throw new SnmpInputError(`fast factor must be 1..10000, got ${fastFactor}`);
    const names = new Set<string>();
    for (const u of opts.users ?? []) {
      if (names.has(u.name)) throw new SnmpInputError(`SNMPv3 user "${u.name}" is listed twice`);
      names.add(u.name);
      makeUser(u); // validates once (and caches the passphrase keys for every agent)
    }
    const prefix = opts.namePrefix ?? 'sim-';
    const digits = Math.max(4, String(this.size - 1).length);
    for (let i = 0; i < this.size; i++) {
      const s = this.seed;
      const n = this.minInterfaces + Math.floor(unit(s, i, 1) * (this.spread + 1));
      const fast = unit(s, i, 2) < fastShare;
      // Log-uniform 0.5..2 around the default device's rates.
      const speed = 2 ** (unit(s, i, 3) * 2 - 1) * (fast ? fastFactor : 1);
      const name = `${prefix}${String(i).padStart(digits, '0')}`;
      this.ifCounts.push(n);
      this.fastAgents.push(fast);
      this.contexts.push({
        index: i,
        sysName: Buffer.from(name),
        sysDescr: Buffer.from(`svc SNMP simulator fleet: ${name}, ${n} interfaces, seed ${s}`),
        engineId: fleetEngineId(s, i),
        engineBoots: boots,
        speed,
        phase: Math.floor(unit(s, i, 4) * 86400),
        uptime: Math.floor(unit(s, i, 5) * 30 * 86400),
      });
    }
  }

  private table(n: number): AgentTable {
    let t = this.tables.get(n);
    if (!t) this.tables.set(n, (t = fleetTable(n)));
    return t;
  }

  /** Binds every agent (in parallel); on a failure stops those bound and throws naming the agent. */
  async start(): Promise<void> {
    if (this.servers.length) return;
    const { opts } = this;
    const agents = this.contexts.map(
      (c, i) =>
        new SnmpAgent({
          host: this.host,
          port: this.basePort ? this.basePort + i : 0,
          community: this.community,
          users: opts.users,
          engineId: c.engineId.toString('hex'),
          engineBoots: c.engineBoots,
          table: this.table(this.ifCounts[i]!),
          context: c,
          ...(opts.bulk ? { bulk: opts.bulk } : {}),
          ...(opts.onActivity ? { onActivity: (e: ActivityEntry) => opts.onActivity!(i, e) } : {}),
        }),
    );
    const results = await Promise.allSettled(agents.map((a) => a.start()));
    const failed = results.findIndex((r) => r.status === 'rejected');
    if (failed >= 0) {
      await Promise.all(agents.map((a) => a.stop()));
      const e = (results[failed] as PromiseRejectedResult).reason as Error & { statusCode?: number };
      const why = `agent ${failed} (${this.contexts[failed]!.sysName.toString()}): ${e.message}`;
      throw e instanceof SnmpInputError ? new SnmpInputError(why, e.statusCode) : new Error(why);
    }
    this.servers = agents;
    this.startedAt = new Date();
  }

  /** Closes every socket. */
  async stop(): Promise<void> {
    const s = this.servers;
    this.servers = [];
    this.startedAt = undefined;
    await Promise.all(s.map((a) => a.stop()));
  }

  get running(): boolean {
    return this.servers.length > 0;
  }

  get started(): Date | undefined {
    return this.startedAt;
  }

  /** Bound ports in agent order (while running). */
  get ports(): number[] {
    return this.servers.map((a) => a.port);
  }

  /** Where to poll each agent, in agent order (an snmp_poll `targets` list). */
  targets(): { host: string; port: number }[] {
    return this.servers.map((a) => ({ host: this.host, port: a.port }));
  }

  /** Interfaces (ifTable rows) of every agent together. */
  get totalInterfaces(): number {
    return this.ifCounts.reduce((a, b) => a + b, 0);
  }

  agent(i: number): FleetAgentInfo {
    const c = this.contexts[i];
    if (!c) throw new RangeError(`no agent ${i} in a fleet of ${this.size}`);
    return {
      index: i,
      host: this.host,
      port: this.servers[i]?.port ?? (this.basePort ? this.basePort + i : 0),
      sysName: c.sysName.toString(),
      interfaces: this.ifCounts[i]!,
      engineId: c.engineId.toString('hex'),
      speed: Number(c.speed.toFixed(3)),
      fast: this.fastAgents[i]!,
    };
  }

  agents(): FleetAgentInfo[] {
    return this.contexts.map((_, i) => this.agent(i));
  }
}
