// A download that stops sending without closing (a dead peer behind a NAT, a connection cut in a
// way the HTTP client does not notice: node-fetch 2 under @google-cloud/storage never ends a body
// whose Content-Length was not reached) would hold a run forever. This bounds the wait for each
// next chunk; the time a slow consumer takes between chunks does not count.
import { SourceError } from '../../core/errors.js';

/**
 * Yields the chunks of `stream`; when no chunk arrives within `ms` of being asked for, destroys the
 * stream and throws a SourceError with `message`.
 */
export async function* withIdleTimeout<T>(stream: AsyncIterable<T> & { destroy?(err?: Error): void }, ms: number, message: () => string): AsyncIterable<T> {
  const it = stream[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      const next = it.next();
      const stalled = new Promise<'stalled'>((resolve) => {
        timer = setTimeout(() => resolve('stalled'), ms);
      });
      const r = await Promise.race([next, stalled]);
      clearTimeout(timer);
      if (r === 'stalled') {
        const err = new SourceError(message());
        next.catch(() => undefined);
        stream.destroy?.(err);
        throw err;
      }
      if (r.done) return;
      yield r.value;
    }
  } finally {
    clearTimeout(timer);
    await it.return?.().catch(() => undefined);
  }
}
