// What every console route module is given.
import type { FastifyRequest } from 'fastify';
import type { Logger } from '../observability/log.js';
import type { Settings } from '../settings.js';
import type { AppSettingsStore } from './app-settings.js';
import type { ConsoleCredentials } from './credentials.js';
import type { ConsoleEvents } from './events.js';
import type { Session, Sessions } from './sessions.js';
import type { ConsoleStats } from './stats.js';

export interface ConsoleDeps {
  settings: Settings;
  log: Logger;
  credentials: ConsoleCredentials;
  sessions: Sessions;
  appSettings: AppSettingsStore;
  stats: ConsoleStats;
  events: ConsoleEvents;
  /** The session of an authenticated request (set by the auth hook). */
  session(req: FastifyRequest): Session | undefined;
  /** Snapshot sent as `full_state` on WebSocket connect. */
  fullState(): Record<string, unknown>;
}
