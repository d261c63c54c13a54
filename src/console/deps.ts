// What every console route module is given: the services' context (service-context.ts) and the services.
import type { FastifyRequest } from 'fastify';
import type { ConsoleCredentials } from './credentials.js';
import type { ServiceContext } from './service-context.js';
import type { Session, Sessions } from './sessions.js';
import type { SimulatorService } from './simulator.js';
import type { TrapService } from './traps.js';

export interface ConsoleDeps extends ServiceContext {
  credentials: ConsoleCredentials;
  sessions: Sessions;
  simulator: SimulatorService;
  traps: TrapService;
  /** The session of an authenticated request (set by the auth hook). */
  session(req: FastifyRequest): Session | undefined;
  /** Snapshot sent as `full_state` on WebSocket connect. */
  fullState(): Record<string, unknown>;
}
