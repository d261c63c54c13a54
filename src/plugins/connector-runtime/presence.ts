// The connection state of a request/response peer (an HTTP store, an object service): there is no
// long-lived connection to watch, so any answer from the peer (a 2xx, a 404, a 403) means it is
// reached, and a failure without one (refused, reset, timed out) means the connection is lost.
import { errorMessage } from '../../core/errors.js';
import type { PluginContext } from '../types.js';
import { connectionReporter } from './reconnect.js';

export class PeerPresence {
  private up = false;
  private readonly report: ReturnType<typeof connectionReporter>;

  /** `isAnswer(e)`: true when a failure carries the peer's answer (an HTTP status, a config error); used by failed() and call(). */
  constructor(
    ctx: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>,
    type: string,
    private readonly isAnswer: (e: unknown) => boolean = () => false,
  ) {
    this.report = connectionReporter(ctx, type);
  }

  /** Runs one exchange and reports what it showed of the peer. */
  async call<T>(op: () => Promise<T>): Promise<T> {
    this.connecting();
    try {
      const result = await op();
      this.answered();
      return result;
    } catch (e) {
      this.failed(e);
      throw e;
    }
  }

  /** An exchange outside call() (an upload or a download stream) starts. */
  connecting() {
    if (!this.up) this.report('connecting');
  }

  /** An exchange outside call() got an answer. */
  answered() {
    if (!this.up) {
      this.up = true;
      this.report('connected');
    }
  }

  /** An exchange outside call() failed: without an answer from the peer, the connection is lost. */
  failed(e: unknown) {
    if (this.isAnswer(e)) this.answered();
    else this.lost(e);
  }

  /** The connection is lost, whatever the error says (an upload cut after its answer began). */
  lost(e: unknown) {
    this.connecting();
    this.up = false;
    this.report('disconnected', typeof e === 'string' ? e : errorMessage(e));
  }
}
