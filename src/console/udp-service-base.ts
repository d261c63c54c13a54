// The lifecycle the simulator and the trap receiver share (spec doc 1 sections 2-4): one UDP server
// started, stopped and restarted through RunState, and one state file {config, resume, engine_id}
// so that a service that was running comes back with the console, on the engine ID it had. Each
// service adds only what is its own (overrides and activity log; receiver users and events).
// Decisions: docs/console.md (Simulator, Traps).
import { isIP } from 'node:net';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { HttpError } from '../core/http-errors.js';
import { engineIdFrom, MAX_ENGINE_BOOTS, type UdpService } from '../snmp/udp.js';
import { readJsonFile, writeFileDurably } from '../util/durable.js';
import type { ServiceContext } from './service-context.js';
import { RunState } from './service-state.js';

/** What every start config holds. */
export interface UdpServiceConfig {
  host: string;
  port: number;
  /** Hex; null: the service's own persisted engine ID. */
  engine_id: string | null;
}

/** The SnmpAgent or the TrapReceiver. */
export type UdpServer = UdpService & { readonly engineId: Buffer };

interface PersistedState<C> {
  config: C | null;
  /** True while the operator wants it running: it is started again when the console starts. */
  resume: boolean;
  /** Generated at the first start without engine_id, then kept (like snmpd's persistent engineID; v3 inform senders cache it). */
  engine_id: string | null;
  /**
   * snmpEngineBoots: one more at every start (RFC 3414 2.2.2, as snmpd keeps it in its persistent
   * state), so that authenticated messages captured before a restart are out of the time window.
   */
  engine_boots: number;
}

export interface UdpServiceOptions {
  /** Its name in 409 messages and logs. */
  what: string;
  /** The state file, in the console state directory. */
  stateFile: string;
  /** The port status shows when no start config names one. */
  defaultPort: number;
  /** It has a restart endpoint (named in the 409 of a start while running). */
  restartable?: boolean;
  /** A start on port 0 persists the port picked, so that a resume binds the same one (devices keep reaching it). */
  keepPickedPort?: boolean;
}

export abstract class PersistentUdpService<C extends UdpServiceConfig, S extends UdpServer> {
  protected readonly run: RunState;
  protected server: S | undefined;
  protected startedAt: Date | undefined;
  protected persisted: PersistedState<C> = { config: null, resume: false, engine_id: null, engine_boots: 0 };
  private writes: Promise<void> = Promise.resolve();

  protected constructor(
    readonly ctx: ServiceContext,
    private readonly opts: UdpServiceOptions,
  ) {
    // publishStatus reads both services, which do not exist yet while the console starts (the
    // resume in restore); nobody is connected then, and full_state carries the state.
    this.run = new RunState(
      opts.what,
      () => {
        try {
          ctx.publishStatus();
        } catch {
          /* console still starting */
        }
      },
      opts.restartable ? ' or use restart' : '',
    );
  }

  /**
   * Builds the server for a start. Called inside the starting transition, so that a config that no
   * longer validates (a hand-edited state file) ends in state error too.
   */
  protected abstract create(cfg: C, engineId: string, engineBoots: number): S;

  /** Called once the server is bound, still inside the starting transition. */
  protected onStarted(): void {}

  /** Reads the state file; when the service was running as the console stopped, starts it again. */
  protected async restore(): Promise<void> {
    const { ctx, opts } = this;
    const file = join(ctx.dir, opts.stateFile);
    try {
      const st = await readJsonFile<PersistedState<C>>(file);
      if (st)
        this.persisted = {
          config: st.config ?? null,
          resume: !!st.resume,
          engine_id: st.engine_id ?? null,
          engine_boots: Number.isInteger(st.engine_boots) ? st.engine_boots : 0,
        };
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message, file }, `${opts.what} state unreadable; starting from defaults`);
    }
    const cfg = this.persisted.config;
    if (!this.persisted.resume || !cfg) return;
    // As snmpd or snmptrapd after a reboot. A failure (port taken meanwhile) leaves state error
    // with the reason; the console starts anyway.
    try {
      await this.startWith(cfg, false);
      ctx.log.info({ host: cfg.host, port: this.server?.port }, `${opts.what} resumed`);
    } catch (e) {
      ctx.log.warn({ err: (e as Error).message }, `${opts.what} could not be resumed`);
    }
  }

  /** Durable writes to the console state directory, one at a time (so they never interleave). */
  protected save(file: string, data: unknown): Promise<void> {
    const next = this.writes.then(() => writeFileDurably(join(this.ctx.dir, file), JSON.stringify(data, null, 2)));
    this.writes = next.catch(() => undefined);
    return next;
  }

  private saveState(): Promise<void> {
    return this.save(this.opts.stateFile, this.persisted);
  }

  /**
   * The status fields both services show; `live` is the server while running. Destructured by
   * status() to keep its field order.
   */
  protected commonStatus() {
    const cfg = this.persisted.config;
    const live = this.run.state === 'running' ? this.server : undefined;
    return {
      ...this.run.view(),
      host: cfg?.host ?? null,
      port: live ? live.port : (cfg?.port ?? this.opts.defaultPort),
      engine_id: live ? live.engineId.toString('hex') : (cfg?.engine_id ?? this.persisted.engine_id),
      started_at: live && this.startedAt ? this.startedAt.toISOString() : null,
      live,
    };
  }

  /** POST .../start: 409 when running; bind errors (409 port in use, 403 privileged port) leave state error. */
  async start(cfg: C): Promise<void> {
    await this.startWith(cfg, true);
  }

  private async startWith(cfg: C, persist: boolean): Promise<void> {
    let engineId = cfg.engine_id ?? this.persisted.engine_id;
    if (!engineId) engineId = this.persisted.engine_id = engineIdFrom(undefined).toString('hex');
    let server: S | undefined;
    try {
      await this.run.start(async () => {
        // Kept even when the bind fails: status shows, and restart retries, what was asked for last.
        this.persisted.config = cfg;
        const boots = (this.persisted.engine_boots = Math.min(this.persisted.engine_boots + 1, MAX_ENGINE_BOOTS));
        const s = this.create(cfg, engineId, boots);
        await s.start();
        this.server = server = s;
        this.startedAt = new Date();
        this.onStarted();
      });
    } catch (e) {
      if (persist && !(e instanceof HttpError)) {
        // A failed start is not something to resume.
        this.persisted.resume = false;
        await this.saveState();
      }
      throw e;
    }
    if (persist) {
      this.persisted.resume = true;
      if (this.opts.keepPickedPort && cfg.port === 0) this.persisted.config = { ...cfg, port: server!.port };
    }
    await this.saveState();
  }

  /** POST .../stop; the service then stays stopped across console restarts. */
  async stop(): Promise<void> {
    await this.stopServer();
    this.persisted.resume = false;
    await this.saveState();
  }

  private async stopServer(): Promise<void> {
    await this.run.stop(async () => {
      const s = this.server;
      this.server = undefined;
      this.startedAt = undefined;
      await s?.stop();
    });
  }

  /** POST .../restart: stop when running, then start with the last config (or `defaults` when there is none). */
  async restart(defaults: C): Promise<void> {
    const cfg = this.persisted.config ?? defaults;
    await this.stopServer();
    await this.startWith(cfg, true);
  }

  /** Console shutdown, not a stop by the operator: `resume` stays as it is, so the service comes back with the console. */
  async close(): Promise<void> {
    await this.stopServer().catch(() => undefined);
    await this.writes;
  }
}

// Route schema fragments of what both services share.

export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const EngineId = (description: string) => Type.String({ pattern: '^(0[xX])?([0-9a-fA-F]{2}){5,32}$', description });

/** The first fields of both status answers (commonStatus without engine_id and started_at, whose descriptions differ). */
export const StatusFields = {
  state: Type.Union([Type.Literal('stopped'), Type.Literal('starting'), Type.Literal('running'), Type.Literal('stopping'), Type.Literal('error')]),
  since: Type.String({ description: 'ISO 8601 time of the last transition' }),
  error: Nullable(Type.String({ description: 'why the last start failed (state error)' })),
  host: Nullable(Type.String()),
  port: Type.Integer({ description: 'the bound port while running, else the configured one' }),
};

/** The start body's bind address and port (placed by each body: property order is the OpenAPI order); without a host, defaultBindHost is bound. */
export const bindFields = (defaultPort: number, privilegedPort: number) => ({
  port: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      description: `UDP port (default ${defaultPort}; 0 picks a free one, shown by status). Below 1024 (${privilegedPort}) needs root or CAP_NET_BIND_SERVICE: 403.`,
    }),
  ),
  host: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'IP address to bind (default SVC_HOST, the console bind address, when it is an IP address, else 127.0.0.1; 0.0.0.0 or :: for every interface)',
    }),
  ),
});

/**
 * The bind address of the simulator and the trap receiver when a start request names none:
 * SVC_HOST (where the console listens, so they are reachable where the console is) when it is an
 * IP address, else loopback.
 */
export function defaultBindHost(consoleHost: string): string {
  return isIP(consoleHost) ? consoleHost : '127.0.0.1';
}
