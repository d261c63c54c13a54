// The running state of the simulator and of the trap receiver (spec doc 1 section 3, names not
// shown there): stopped -> starting -> running -> stopping -> stopped, and error when a start
// fails (port in use, no privilege) or the socket dies. From error a start (or restart) is allowed.
// Every transition is pushed as a `status` message.
import { httpError } from '../core/http-errors.js';

export type RunStateName = 'stopped' | 'starting' | 'running' | 'stopping' | 'error';

export interface RunStateView {
  state: RunStateName;
  /** ISO 8601 time of the last transition. */
  since: string;
  /** Why the last start failed (state error). */
  error: string | null;
}

export class RunState {
  private name: RunStateName = 'stopped';
  private since = new Date();
  private error: string | null = null;

  constructor(
    private readonly what: string,
    private readonly onChange: () => void,
    /** Said after "stop it first" when a start finds it running (e.g. "or use restart"). */
    private readonly runningHint = '',
  ) {}

  get state(): RunStateName {
    return this.name;
  }

  view(): RunStateView {
    return { state: this.name, since: this.since.toISOString(), error: this.error };
  }

  /**
   * Runs `start` through starting -> running (or -> error, rethrowing). 409 when already running
   * or in a transition.
   */
  async start(start: () => Promise<void>): Promise<void> {
    if (this.name === 'running') throw httpError('HTTP_SERVICE_STATE', `the ${this.what} is already running; stop it first${this.runningHint}`);
    if (this.name === 'starting' || this.name === 'stopping') throw httpError('HTTP_SERVICE_STATE', `the ${this.what} is ${this.name}; try again in a moment`);
    this.set('starting');
    try {
      await start();
      this.set('running');
    } catch (e) {
      this.set('error', (e as Error).message);
      throw e;
    }
  }

  /** Runs `stop` through stopping -> stopped; stopping a stopped service is a no-op, from error it clears the error. */
  async stop(stop: () => Promise<void>): Promise<void> {
    if (this.name === 'starting' || this.name === 'stopping') throw httpError('HTTP_SERVICE_STATE', `the ${this.what} is ${this.name}; try again in a moment`);
    if (this.name !== 'running') {
      if (this.name === 'error') this.set('stopped');
      return;
    }
    this.set('stopping');
    try {
      await stop();
    } finally {
      this.set('stopped');
    }
  }

  private set(name: RunStateName, error: string | null = null) {
    this.name = name;
    this.error = error;
    this.since = new Date();
    this.onChange();
  }
}
