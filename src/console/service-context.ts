// What the console's services (simulator, traps, walk) are given; the route modules get ConsoleDeps
// (deps.ts), which adds the services themselves.
import type { MibStore } from '../mib/store.js';
import type { Logger } from '../observability/log.js';
import type { Settings } from '../settings.js';
import type { AppSettingsStore } from './app-settings.js';
import type { ConsoleEvents } from './events.js';
import type { ConsoleStats } from './stats.js';

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
