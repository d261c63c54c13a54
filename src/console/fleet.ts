// The console's agent fleet (issue 14, beyond spec doc 1): many simulated agents at once, one UDP
// port each (src/snmp/fleet.ts), started, listed and stopped through /api/simulator/fleet. A lab
// and benchmark tool: held in memory only, not resumed when the console restarts. Decisions:
// docs/console.md (Agent fleet).
import { isIP } from 'node:net';
import { httpError } from '../core/http-errors.js';
import { Fleet, MAX_FLEET_AGENTS, type FleetAgentInfo } from '../snmp/fleet.js';
import { makeUser } from '../snmp/usm.js';
import { SnmpInputError } from '../snmp/values.js';
import type { BulkLimits } from '../snmp/agent.js';
import type { V3UserInput } from './simulator.js';
import { RunState } from './service-state.js';

export const DEFAULT_FLEET_AGENTS = 10;
export { MAX_FLEET_AGENTS };

export interface FleetInput {
  agents?: number;
  host?: string;
  base_port?: number;
  interfaces?: number;
  interface_spread?: number;
  community?: string;
  seed?: number;
  fast_share?: number;
  v3_users?: V3UserInput[];
}

/** A fleet's start config as status shows it (without keys). */
interface FleetConfig {
  agents: number;
  host: string;
  base_port: number;
  interfaces: number;
  interface_spread: number;
  community: string;
  seed: number;
  fast_share: number;
  v3_users: V3UserInput[];
}

export class FleetService {
  private readonly run = new RunState('fleet', () => undefined);
  private fleet: Fleet | undefined;
  private config: FleetConfig | undefined;
  private requests = 0;
  private errors = 0;

  constructor(private readonly bulk?: BulkLimits) {}

  /** Defaults filled and everything checked (422) before anything is bound. */
  normalize(input: FleetInput, defaultHost: string): { cfg: FleetConfig; fleet: Fleet } {
    const cfg: FleetConfig = {
      agents: input.agents ?? DEFAULT_FLEET_AGENTS,
      host: input.host ?? defaultHost,
      base_port: input.base_port ?? 0,
      interfaces: input.interfaces ?? 20,
      interface_spread: input.interface_spread ?? 8,
      community: input.community ?? 'public',
      seed: input.seed ?? 1,
      fast_share: input.fast_share ?? 0.1,
      v3_users: (input.v3_users ?? []).map((u) => ({ ...u })),
    };
    if (!isIP(cfg.host)) throw httpError('HTTP_INVALID', `host "${cfg.host}" must be an IPv4 or IPv6 address (0.0.0.0 or :: for every interface)`);
    const names = new Set<string>();
    const users = cfg.v3_users.map((u, i) => {
      if (names.has(u.username)) throw httpError('HTTP_INVALID', `v3_users[${i}]: user "${u.username}" is listed twice`);
      names.add(u.username);
      const user = { name: u.username, authProtocol: u.auth_protocol, authKey: u.auth_key, privProtocol: u.priv_protocol, privKey: u.priv_key };
      try {
        makeUser(user);
      } catch (e) {
        throw httpError('HTTP_INVALID', `v3_users[${i}]: ${(e as Error).message}`);
      }
      return user;
    });
    try {
      const fleet = new Fleet({
        agents: cfg.agents,
        host: cfg.host,
        basePort: cfg.base_port,
        interfaces: cfg.interfaces,
        interfaceSpread: cfg.interface_spread,
        community: cfg.community,
        seed: cfg.seed,
        fastShare: cfg.fast_share,
        users,
        ...(this.bulk ? { bulk: this.bulk } : {}),
        onActivity: (_i, e) => {
          this.requests++;
          if (e.error && e.error !== 'engine discovery' && e.error !== 'time sync') this.errors++;
        },
      });
      return { cfg, fleet };
    } catch (e) {
      if (e instanceof SnmpInputError) throw httpError('HTTP_INVALID', e.message);
      throw e;
    }
  }

  /** 409 while one runs (or starts or stops); bind errors: 409 port in use, 403 privileged port, 400 foreign address. */
  async start(input: FleetInput, defaultHost: string): Promise<void> {
    if (this.run.state === 'running') throw httpError('HTTP_SERVICE_STATE', 'a fleet is already running; stop it first (DELETE /api/simulator/fleet)');
    const { cfg, fleet } = this.normalize(input, defaultHost);
    await this.run.start(async () => {
      this.config = cfg;
      this.requests = 0;
      this.errors = 0;
      await fleet.start();
      this.fleet = fleet;
    });
  }

  /** A no-op when none runs (clears state error). */
  async stop(): Promise<void> {
    await this.run.stop(async () => {
      const f = this.fleet;
      this.fleet = undefined;
      await f?.stop();
    });
  }

  status() {
    const f = this.run.state === 'running' ? this.fleet : undefined;
    const cfg = this.config;
    const ports = f?.ports ?? [];
    const counts = f ? f.agents().map((a) => a.interfaces) : [];
    return {
      ...this.run.view(),
      agents: cfg?.agents ?? null,
      host: cfg?.host ?? null,
      base_port: cfg?.base_port ?? null,
      ports: f ? { first: Math.min(...ports), last: Math.max(...ports), consecutive: cfg!.base_port > 0 } : null,
      community: cfg?.community ?? null,
      seed: cfg?.seed ?? null,
      interfaces: f ? { min: Math.min(...counts), max: Math.max(...counts), total: f.totalInterfaces } : null,
      fast_share: cfg?.fast_share ?? null,
      versions: cfg?.v3_users.length ? ['1', '2c', '3'] : ['1', '2c'],
      v3_users: (cfg?.v3_users ?? []).map((u) => ({
        username: u.username,
        auth_protocol: u.auth_key || u.auth_protocol ? (u.auth_protocol ?? 'SHA') : null,
        priv_protocol: u.priv_key || u.priv_protocol ? (u.priv_protocol ?? 'AES128') : null,
      })),
      started_at: f?.started?.toISOString() ?? null,
      requests: this.requests,
      errors: this.errors,
    };
  }

  /** The agents of the running fleet, `offset` and `limit` as given; 409 when none runs. */
  agents(offset: number, limit: number): { agents: ReturnType<typeof agentView>[]; total: number } {
    const f = this.run.state === 'running' ? this.fleet : undefined;
    if (!f) throw httpError('HTTP_SERVICE_STATE', 'no fleet is running; start one with POST /api/simulator/fleet');
    const out = [];
    for (let i = offset; i < Math.min(f.size, offset + limit); i++) out.push(agentView(f.agent(i)));
    return { agents: out, total: f.size };
  }

  async close(): Promise<void> {
    await this.stop().catch(() => undefined);
  }
}

const agentView = (a: FleetAgentInfo) => ({
  index: a.index,
  host: a.host,
  port: a.port,
  sys_name: a.sysName,
  interfaces: a.interfaces,
  engine_id: a.engineId,
  speed: a.speed,
  fast: a.fast,
});
