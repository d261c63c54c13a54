// The console's event channel (spec doc 1 section 6): everything pushed over /api/ws goes through
// this hub as `{type, data, timestamp}`.
import { EventEmitter } from 'node:events';

export type EventType = 'full_state' | 'status' | 'stats' | 'mibs' | 'trap' | 'simulator_log';

export interface ConsoleEvent {
  type: EventType;
  data: unknown;
  timestamp: string;
}

export class ConsoleEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    // One listener per WebSocket client.
    this.emitter.setMaxListeners(0);
  }

  publish(type: Exclude<EventType, 'full_state'>, data: unknown) {
    this.emitter.emit('event', { type, data, timestamp: new Date().toISOString() } satisfies ConsoleEvent);
  }

  subscribe(listener: (e: ConsoleEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }
}
