// Structured logging (pino). Every component gets a child logger carrying its own bindings
// (pipeline, run_id, component) so each line of a run can be traced back to it.
import { pino } from 'pino';

export type Logger = pino.Logger;

const LEVELS: Record<string, string> = { DEBUG: 'debug', INFO: 'info', WARNING: 'warn', WARN: 'warn', ERROR: 'error' };

export function createLogger(opts: { level?: string; destination?: number | string } = {}): Logger {
  const level = LEVELS[(opts.level ?? process.env.SVC_LOG_LEVEL ?? 'INFO').toUpperCase()] ?? 'info';
  return pino({ level, base: undefined }, pino.destination({ dest: opts.destination ?? 2, sync: true }));
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = pino({ level: 'silent' });
