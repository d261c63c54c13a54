// A part that cannot stop is named in an error line and makes the exit code 1; the parts after it
// are still stopped (issue 36: "exit 0, or 1 with a clear log line if a part could not stop").
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { stopParts } from '../../src/cli/stop-parts.js';

function recordingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

describe('stopParts', () => {
  it('stops every part in order and returns 0', async () => {
    const { log } = recordingLogger();
    const order: string[] = [];
    const code = await stopParts(log, undefined, [
      ['daemon', async () => void order.push('daemon')],
      ['console', async () => void order.push('console')],
    ]);
    expect(code).toBe(0);
    expect(order).toEqual(['daemon', 'console']);
  });

  it('a part that fails is logged by name, the next still stops, and the code is 1', async () => {
    const { log, lines } = recordingLogger();
    const order: string[] = [];
    const code = await stopParts(log, 'stopped by a signal during the start (at before-console)', [
      ['daemon', async () => Promise.reject(new Error('database close timed out'))],
      ['console', async () => void order.push('console')],
    ]);
    expect(code).toBe(1);
    expect(order).toEqual(['console']);
    await new Promise((r) => setImmediate(r));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'stopping', reason: 'stopped by a signal during the start (at before-console)' }));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'could not stop the daemon', part: 'daemon', err: 'database close timed out' }));
  });
});
