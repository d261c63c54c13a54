// Durable state of stateful transforms through the real engine: loaded at run start, written only
// after a successful run, discarded when the stateful transforms change, flush runs.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { runPipeline, type TransformStateIO } from '../../src/engine/runner.js';
import { fileStateIO, stateConfigHash } from '../../src/engine/transform-state.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import { tempDir } from '../helpers/fs.js';
import { readNdjson } from '../plugins/transforms/_harness.js';

const WINDOW = `    - { type: window_aggregate, time_field: ts, window_seconds: 60, group_by: [h], aggregations: [{ function: sum, field: v }] }`;
const DELTA = `    - { type: counter_delta, key_fields: [h], counters: [c], time_field: ts }`;

function setup(transforms: string, sinkPath?: string, extra = '') {
  const root = tempDir();
  const dirs = { input: join(root, 'in'), out: sinkPath ?? join(root, 'out') };
  mkdirSync(dirs.input);
  const yaml = `
version: "1"
pipeline:
  name: st
  schedule: { type: manual }
  source: { type: local, path: ${JSON.stringify(dirs.input)}, file_pattern: "*.ndjson", delete_after_read: true }
  serializer_in: { type: ndjson }
  transforms:
${transforms}
  serializer_out: { type: ndjson }
${extra}
  sinks:
    - { type: local, path: ${JSON.stringify(dirs.out)}, filename_template: "out-{run_id}.ndjson" }
`;
  const r = loadPipelineText(yaml, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  const config = r.config;
  const stateFile = join(root, 'state.json');
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (_o: unknown, m?: string) => void warnings.push(m ?? String(_o)), child: () => log } as unknown as Logger;
  const io = (): TransformStateIO => fileStateIO(stateFile, stateConfigHash(config), log);
  let n = 0;
  async function run(records: object[], opts: { flush?: boolean; state?: TransformStateIO } = {}) {
    writeFileSync(join(dirs.input, `f${n++}.ndjson`), records.map((x) => JSON.stringify(x)).join('\n') + '\n');
    const record = await runPipeline(config, { log, state: opts.state ?? io(), flush: opts.flush });
    return { record, out: readNdjson(join(dirs.out, `out-${record.run_id}.ndjson`)) };
  }
  return { run, stateFile, warnings, config, dirs };
}

describe('transform state through the engine', () => {
  it('counter_delta: the previous run’s last sample is the next run’s baseline', async () => {
    const s = setup(DELTA);
    expect((await s.run([{ h: 'a', ts: 0, c: 10 }])).out).toEqual([]);
    const second = await s.run([{ h: 'a', ts: 60, c: 70 }]);
    expect(second.record.status).toBe('success');
    expect(second.out).toEqual([{ h: 'a', ts: 60, c: 70, c_delta: 60 }]);
    const stored = JSON.parse(readFileSync(s.stateFile, 'utf8')) as { config_sha256: string; state: Record<string, Record<string, unknown>> };
    expect(stored.config_sha256).toBe(stateConfigHash(s.config));
    expect(Object.keys(stored.state)).toEqual(['transforms[0].counter_delta']);
    expect(stored.state['transforms[0].counter_delta']).toEqual({ a: { t: 60000, v: { c: 70 } } });
  });

  it('window_aggregate: open windows survive to the next run; a flush run emits partials and clears them', async () => {
    const s = setup(WINDOW);
    expect(
      (
        await s.run([
          { h: 'x', ts: 1, v: 1 },
          { h: 'x', ts: 61, v: 2 },
        ])
      ).out,
    ).toEqual([{ window_start: '1970-01-01T00:00:00.000Z', window_end: '1970-01-01T00:01:00.000Z', h: 'x', v_sum: 1, window_complete: true }]);
    // Next run: the [60,120) window still holds the 2 from the last run.
    const second = await s.run([
      { h: 'x', ts: 70, v: 3 },
      { h: 'x', ts: 130, v: 4 },
    ]);
    expect(second.out).toEqual([{ window_start: '1970-01-01T00:01:00.000Z', window_end: '1970-01-01T00:02:00.000Z', h: 'x', v_sum: 5, window_complete: true }]);
    const flushed = await s.run([{ h: 'y', ts: 150, v: 1 }], { flush: true });
    expect(flushed.record.records_out).toBe(2);
    expect(flushed.out).toEqual([
      { window_start: '1970-01-01T00:02:00.000Z', window_end: '1970-01-01T00:03:00.000Z', h: 'x', v_sum: 4, window_complete: false },
      { window_start: '1970-01-01T00:02:00.000Z', window_end: '1970-01-01T00:03:00.000Z', h: 'y', v_sum: 1, window_complete: false },
    ]);
    const state = (JSON.parse(readFileSync(s.stateFile, 'utf8')) as { state: Record<string, { windows: unknown[] }> }).state;
    expect(state['transforms[0].window_aggregate']!.windows).toEqual([]);
  });

  it('state is written only after a successful run; an aborted run leaves the last good state', async () => {
    const s = setup(DELTA, undefined, '  on_error: abort');
    await s.run([{ h: 'a', ts: 0, c: 10 }]);
    const before = readFileSync(s.stateFile, 'utf8');
    const aborted = await s.run([
      { h: 'a', ts: 60, c: 20 },
      { h: 'a', ts: 61, c: 'x' },
    ]);
    expect(aborted.record.status).toBe('aborted');
    expect(readFileSync(s.stateFile, 'utf8')).toBe(before);
  });

  it('a changed stateful transform discards the stored state (with a warning); other edits keep it', async () => {
    const s = setup(DELTA);
    await s.run([{ h: 'a', ts: 0, c: 10 }]);
    const changed = setup(DELTA.replace('counters: [c]', 'counters: [c], rate: true'));
    const io = fileStateIO(s.stateFile, stateConfigHash(changed.config), silentLogger);
    expect(await io.load()).toBeNull();
    // Same transforms, another sink path: the same hash.
    expect(stateConfigHash(setup(DELTA, '/tmp/elsewhere').config)).toBe(stateConfigHash(s.config));
  });

  it('a corrupt stored body is discarded with a note, the run goes on', async () => {
    const s = setup(DELTA);
    writeFileSync(s.stateFile, JSON.stringify({ config_sha256: stateConfigHash(s.config), state: { 'transforms[0].counter_delta': 'garbage' } }));
    const r = await s.run([{ h: 'a', ts: 0, c: 10 }]);
    expect(r.record.status).toBe('success');
    expect(r.record.errors).toEqual(['transforms[0].counter_delta: stored state discarded (counter_delta state must be an object of series)']);
    writeFileSync(s.stateFile, '{not json');
    expect((await s.run([{ h: 'a', ts: 0, c: 10 }])).record.status).toBe('success');
    expect(s.warnings).toContain('stored transform state discarded: the file is not JSON');
  });
});
