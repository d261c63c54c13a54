// The console's event channel (spec doc 1 section 6): everything pushed over /api/ws goes through
// this hub as `{type, data, timestamp}`, serialized once for every client.
import { EventEmitter } from 'node:events';
import { exactNumber } from '../util/exact-number.js';

export type EventType = 'full_state' | 'status' | 'stats' | 'mibs' | 'trap' | 'simulator_log' | 'pong';

export interface ConsoleEvent {
  type: EventType;
  data?: unknown;
  timestamp: string;
}

/**
 * The JSON text of an event. A bigint (a Counter64 that reached an event) is written by
 * exactNumber, as everywhere in the API; it never throws.
 */
export function eventText(type: EventType, data?: unknown): string {
  const e: ConsoleEvent = { type, ...(data === undefined ? {} : { data }), timestamp: new Date().toISOString() };
  try {
    return JSON.stringify(e); // the usual case: no bigint, no replacer call per value
  } catch {
    return JSON.stringify(e, (_k, v: unknown) => (typeof v === 'bigint' ? exactNumber(v) : v));
  }
}

export class ConsoleEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    // One listener per WebSocket client.
    this.emitter.setMaxListeners(0);
  }

  publish(type: Exclude<EventType, 'full_state' | 'pong'>, data: unknown) {
    // Traps can come at thousands a second: no JSON work while no client listens.
    if (this.emitter.listenerCount('event') === 0) return;
    this.emitter.emit('event', eventText(type, data));
  }

  /** `listener` gets each event's JSON text. */
  subscribe(listener: (text: string) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }
}
