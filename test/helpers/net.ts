// Network helpers with no test-runner dependency (the benchmarks import them too).
import { createServer } from 'node:net';

/** A loopback port that was free a moment ago (bind to 0, read it, release it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
