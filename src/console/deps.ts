// What every console route module and service is given.
import type { FastifyRequest } from 'fastify';
import type { MibStore } from '../mib/store.js';
import type { Logger } from '../observability/log.js';
import type { Settings } from '../settings.js';
import type { AppSettingsStore } from './app-settings.js';
import type { ConsoleCredentials } from './credentials.js';
import type { ConsoleEvents } from './events.js';
import type { Session, Sessions } from './sessions.js';
import type { SimulatorService } from './simulator.js';
import type { ConsoleStats } from './stats.js';
import type { TrapService } from './traps.js';

/** What the simulator and trap services need: where to persist, limits, counters, the event hub. */
export interface ServiceContext {
  settings: Settings;
  /** The console state directory (consoleStateDir). */
  dir: string;
  log: Logger;
  appSettings: AppSettingsStore;
  stats: ConsoleStats;
  events: ConsoleEvents;
  mibs: MibStore;
  /** Pushes a `status` message (both running states) after a transition. */
  publishStatus(): void;
}

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
