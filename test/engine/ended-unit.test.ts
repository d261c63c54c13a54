// An ended unit may wait long for its shared flush (runner.ts finalizeEnded): it must not hold the
// records and bodies it carried meanwhile, or a busy stream keeps every record of the run alive
// (otlp-ingest bench, docs/benchmarks.md). What its done() and the sinks need is kept.
import { expect, it } from 'vitest';
import { loadPipelineText } from '../../src/config/load.js';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import type { SourceUnit } from '../../src/plugins/types.js';
import { capture, withUnitsSource } from '../helpers/plugins.js';

it('a unit read to its end lets go of its records and bodies before it is finished; its records are delivered', async () => {
  const units: SourceUnit[] = [];
  const seenAtDone: { records: unknown; bodies: unknown }[] = [];
  const unit = (i: number, carry: 'records' | 'bodies'): SourceUnit => {
    const u: SourceUnit = {
      meta: { source_filename: `u${i}` },
      messages: true,
      ...(carry === 'records'
        ? {
            records: [
              { i, v: 1 },
              { i, v: 2 },
            ],
          }
        : { bodies: [Buffer.from(`{"i":${i},"v":1}`), Buffer.from(`{"i":${i},"v":2}`)] }),
      read: () => {
        throw new Error('read() is not used when records or bodies are given');
      },
      async done() {
        seenAtDone.push({ records: u.records, bodies: u.bodies });
      },
    };
    units.push(u);
    return u;
  };
  const registry = withUnitsSource('carrying', 'Test source: units that carry their records or their bodies.', async function* () {
    for (let i = 0; i < 4; i++) yield unit(i, i % 2 ? 'bodies' : 'records');
  });
  const yaml = `
version: "1"
pipeline:
  name: p
  schedule: { type: manual }
  source: { type: carrying }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks:
    - { type: memory, id: ended-unit }
`;
  const cap = capture('ended-unit');
  const r = loadPipelineText(yaml, { env: {}, registry });
  const record = await runPipeline(r.config!, { registry, log: silentLogger });
  expect(record).toMatchObject({ status: 'success', records_in: 8, records_out: 8 });
  expect(cap.text.trim().split('\n')).toHaveLength(8);
  expect(seenAtDone).toEqual(Array.from({ length: 4 }, () => ({ records: undefined, bodies: undefined })));
  for (const u of units) {
    expect([u.records, u.bodies]).toEqual([undefined, undefined]);
    const left: Buffer[] = [];
    for await (const b of u.read()) left.push(b);
    expect(left).toEqual([]);
  }
});
