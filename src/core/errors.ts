// Typed errors that plugins throw; the engine, not the plugin, decides what happens next
// (retry, DLQ, skip, abort) according to on_error and the sink's reliability fields.

/** One record could not be transformed; rule 6: a message and a skipped record. */
export class RecordError extends Error {
  override name = 'RecordError';
}

/** A sink write failed. `retryable` false means retrying the same batch cannot help. */
export class WriteError extends Error {
  override name = 'WriteError';
  /** The peer's own wait before a retry (HTTP `Retry-After`), in ms: the runtime waits at least this long. */
  readonly retryAfterMs?: number;
  constructor(
    message: string,
    readonly retryable = true,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, options);
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/** A source could not be read at all: the run fails. */
export class SourceError extends Error {
  override name = 'SourceError';
}

/** A configuration that cannot be used; message already tells the user what to fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));
