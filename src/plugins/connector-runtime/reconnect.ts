// One reconnect policy for every connector: the delay doubles from `reconnect_delay_seconds` up to a
// minute, `max_reconnect_attempts` (0 = forever) bounds the attempts in a row, and every change of
// the connection's state is logged once and counted (the svc_connector_state gauge).
import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import { SourceError } from '../../core/errors.js';
import type { ConnectionState, PluginContext } from '../types.js';

/** The longest wait between two attempts, however many failed. */
export const MAX_RECONNECT_DELAY_MS = 60_000;

/** The reconnect fields of a stream source (doc 3 names them for kafka and gnmi; the others share them). */
export const reconnectFields = (defaultDelayS = 5) => ({
  reconnect_delay_seconds: Type.Number({
    minimum: 0,
    default: defaultDelayS,
    description: 'Wait before the first reconnect attempt; doubles with each failed attempt, up to 60 s.',
  }),
  max_reconnect_attempts: Type.Integer({
    minimum: 0,
    default: 0,
    description: 'Failed attempts in a row before the stream gives up and the pipeline goes to error; 0 retries forever.',
  }),
});

export interface ReconnectPolicy {
  reconnect_delay_seconds: number;
  max_reconnect_attempts: number;
  /** Never reconnect (websocket `reconnect: false`): the first loss or failed connect ends the stream. */
  disabled?: boolean;
}

export function reconnectDelayMs(attempt: number, baseSeconds: number): number {
  return Math.min(baseSeconds * 1000 * 2 ** Math.max(0, attempt - 1), Math.max(MAX_RECONNECT_DELAY_MS, baseSeconds * 1000));
}

/**
 * A stream gave up reconnecting: the run fails and the daemon does not restart it (the pipeline
 * stays in `error` with this message until it is started again).
 */
export class GaveUpError extends SourceError {
  override name = 'GaveUpError';
  readonly gaveUp = true;
}

/** Reports connection states for one component: logs each change once, feeds the gauge. */
export function connectionReporter(ctx: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>, type: string) {
  let last: ConnectionState | undefined;
  let everConnected = false;
  return (state: ConnectionState, detail?: string) => {
    if (state === last) return;
    last = state;
    ctx.telemetry?.connection(state);
    const fields = { connector: type, state, ...(detail ? { reason: ctx.redact ? ctx.redact(detail) : detail } : {}) };
    if (state === 'connected') {
      ctx.log.info(fields, everConnected ? `${type}: connected again` : `${type}: connected`);
      everConnected = true;
    } else if (state === 'disconnected') ctx.log.warn(fields, `${type}: connection lost; reconnecting`);
    else if (state === 'failed') ctx.log.error(fields, `${type}: gave up reconnecting`);
    else ctx.log.debug(fields, `${type}: connecting`);
  };
}

/**
 * Waits before reconnect attempt `attempt` (1 = the first after a failure), or throws GaveUpError
 * when the policy allows no more. Returns false when `signal` aborted the wait.
 */
export async function waitToReconnect(policy: ReconnectPolicy, attempt: number, reason: string, signal: AbortSignal, type: string): Promise<boolean> {
  if (policy.disabled) throw new GaveUpError(`${type}: ${reason}; not reconnecting (reconnect is off)`);
  if (policy.max_reconnect_attempts > 0 && attempt > policy.max_reconnect_attempts) {
    throw new GaveUpError(`${type}: gave up after ${policy.max_reconnect_attempts} reconnect attempts: ${reason}`);
  }
  try {
    await sleep(reconnectDelayMs(attempt, policy.reconnect_delay_seconds), undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
