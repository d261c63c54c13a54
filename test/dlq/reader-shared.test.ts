// A DLQ sink shared by two pipelines: each reads back its own envelopes only, and the other's do
// not use up the read's bound (a busy neighbour must not hide a pipeline's dead letters).
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readDlq } from '../../src/dlq/reader.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { tempDir } from '../helpers/fs.js';
import { failingInput, pipelineWithDlq } from './_write.js';

describe('a shared DLQ sink', () => {
  it("reads one pipeline's envelopes, bounded by its own count", async () => {
    const shared = `{ type: local, path: ${JSON.stringify(join(tempDir('svc-dlq-shared-'), 'dead'))} }`;
    const a = pipelineWithDlq(failingInput(5, 2), shared, 'pa');
    const b = pipelineWithDlq(failingInput(6, 4), shared, 'pb');
    for (const c of [b, a]) expect(await runPipeline(c)).toMatchObject({ status: 'success' });
    const read = (c: typeof a, max?: number) => readDlq(c, { log: silentLogger, signal: AbortSignal.timeout(30_000), max });

    const ra = await read(a, 2);
    expect(ra.truncated).toBe(false);
    expect(ra.entries.map((e) => e.envelope._pipeline)).toEqual(['pa', 'pa']);
    const rb = await read(b);
    expect(rb.entries.map((e) => e.envelope._pipeline)).toEqual(['pb', 'pb', 'pb', 'pb']);
    expect((await read(b, 3)).truncated).toBe(true);
  });
});
