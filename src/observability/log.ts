// Structured logging (pino). Every component gets a child logger carrying its own bindings
// (pipeline, run_id, component) so each line of a run can be traced back to it.
import { createRequire } from 'node:module';
import { pino } from 'pino';
import type Pretty from 'pino-pretty';

// pino-pretty (CommonJS) is required for SVC_LOG_FORMAT=text only, not by every process (issue 18).
const require = createRequire(import.meta.url);

export type Logger = pino.Logger;

const LEVELS: Record<string, string> = { DEBUG: 'debug', INFO: 'info', WARNING: 'warn', WARN: 'warn', ERROR: 'error' };

export function createLogger(opts: { level?: string; format?: 'json' | 'text'; destination?: number | string } = {}): Logger {
  const level = LEVELS[(opts.level ?? process.env.SVC_LOG_LEVEL ?? 'INFO').toUpperCase()] ?? 'info';
  const dest = opts.destination ?? 2;
  const format = opts.format ?? (process.env.SVC_LOG_FORMAT?.toLowerCase() === 'text' ? 'text' : 'json');
  const stream =
    format === 'text'
      ? (require('pino-pretty') as typeof Pretty)({ destination: dest, colorize: false, sync: true, translateTime: 'SYS:standard' })
      : pino.destination({ dest, sync: true });
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, stream);
}

/**
 * `log` with each line it or its children write passed through `redact` as JSON text (a pipeline
 * run's logger: connector secrets and secret-named `${VAR}` values masked, whichever plugin logs
 * them; so a secret must be given as it stands in a JSON line too, escapes and all). Pino has no
 * per-child message hook, so this sets the child's own streamWrite hook, which its children inherit.
 */
export function maskedLogger(log: Logger, redact: (jsonLine: string) => string): Logger {
  const child = log.child({});
  const hooks = (child as unknown as Record<symbol, { streamWrite?: (s: string) => string }>)[pino.symbols.hooksSym] ?? {};
  const before = hooks.streamWrite;
  Object.assign(child, { [pino.symbols.hooksSym]: { ...hooks, streamWrite: (s: string) => redact(before ? before(s) : s) } });
  return child;
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = pino({ level: 'silent' });
