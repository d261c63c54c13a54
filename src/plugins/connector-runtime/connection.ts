// The connection of a sink (or of a batch source): opened at first use, shared by concurrent
// writes, dropped when it breaks and opened again by the next write. A write that fails is retried
// by the runtime's sink policy (retry_count, retry_delay_seconds, circuit breaker), so a sink never
// loops on its own; each state change is logged once and counted.
import { errorMessage, WriteError } from '../../core/errors.js';
import type { PluginContext } from '../types.js';
import { connectionReporter } from './reconnect.js';

export class Connection<T> {
  private client?: T;
  private opening?: Promise<T>;
  private readonly report: ReturnType<typeof connectionReporter>;

  constructor(
    private readonly ctx: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>,
    private readonly type: string,
    private readonly open: (lost: (err: Error) => void) => Promise<T>,
    private readonly close: (client: T) => Promise<void>,
  ) {
    this.report = connectionReporter(ctx, type);
  }

  /** The open connection, connecting first when there is none; a failure is a retryable WriteError. */
  async get(): Promise<T> {
    if (this.client) return this.client;
    this.opening ??= (async () => {
      this.report('connecting');
      try {
        let client: T | undefined;
        const c = await this.open((err) => {
          if (client !== undefined) this.drop(client, err);
        });
        client = c;
        this.client = c;
        this.report('connected');
        return c;
      } catch (e) {
        const msg = errorMessage(e);
        this.report('disconnected', msg);
        throw new WriteError(`${this.type}: cannot connect: ${this.ctx.redact ? this.ctx.redact(msg) : msg}`, true, { cause: e });
      } finally {
        this.opening = undefined;
      }
    })();
    return this.opening;
  }

  /**
   * Runs `op` on the connection. A failure that `broken` says came from the connection (not from
   * the data) drops it, so the retry reconnects; the error is rethrown as a WriteError.
   */
  async use<R>(op: (client: T) => Promise<R>, broken: (e: unknown) => boolean = () => true): Promise<R> {
    const client = await this.get();
    try {
      return await op(client);
    } catch (e) {
      if (e instanceof WriteError && !e.retryable) throw e;
      if (broken(e)) this.drop(client, e as Error);
      const msg = errorMessage(e);
      throw new WriteError(`${this.type}: ${this.ctx.redact ? this.ctx.redact(msg) : msg}`, true, { cause: e });
    }
  }

  /** Forgets a broken connection (closing it quietly); the next get() connects again. */
  drop(client: T, err?: Error) {
    if (this.client !== client) return;
    this.client = undefined;
    this.report('disconnected', err ? errorMessage(err) : undefined);
    this.close(client).catch(() => {});
  }

  async end() {
    const c = this.client ?? (await this.opening?.catch(() => undefined));
    this.client = undefined;
    if (c !== undefined) await this.close(c);
  }
}
