// Stops the parts of a long-running command one after another; a part that cannot stop is logged
// by name and makes the exit code 1, and the others are still stopped.
import type { Logger } from '../observability/log.js';

export async function stopParts(log: Logger, why: string | undefined, parts: [name: string, stop: () => Promise<unknown> | undefined][]): Promise<number> {
  if (why) log.info({ reason: why }, 'stopping');
  let code = 0;
  for (const [name, stop] of parts) {
    try {
      await stop();
    } catch (e) {
      log.error({ part: name, err: (e as Error).message }, `could not stop the ${name}`);
      code = 1;
    }
  }
  return code;
}
