// svc top's table on its own (src/cli/top.ts): the rows a pipeline and its stages make, how a narrow
// terminal is fitted, and what stands out in colour.
import { describe, expect, it } from 'vitest';
import { topRows, topTable, type Listed } from '../../src/cli/top.js';

const long = 'a-pipeline-with-a-rather-long-name-for-a-terminal';

function running(name: string, circuit: 'open' | 'closed'): Listed {
  return {
    name,
    status: 'running',
    live: {
      run_id: 'r1',
      started_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:01.000Z',
      records_in_per_sec: 12.5,
      records_out_per_sec: 10,
      records_in: 1000,
      records_out: 800,
      records_filtered: 150,
      records_skipped: 0,
      dlq_count: 50,
      bytes_in: 1,
      bytes_out: 1,
      errors: [],
      stages: {
        source: { type: 'kafka', records: 1000, bytes: 1, parse_errors: 20, per_sec: 12.5 },
        transforms: [{ label: 'transforms[0] (filter)', type: 'filter', in: 980, out: 820, errors: 10, per_sec: 10.2 }],
        sinks: [
          {
            label: 'sinks[0] (elasticsearch)',
            type: 'elasticsearch',
            matched: 820,
            transform_errors: 0,
            written: 800,
            failed: 20,
            writes: 30,
            retries: 7,
            bytes: 1,
            circuit,
            per_sec: 10,
          },
        ],
        dlq: { label: 'dlq (local)', type: 'local', records: 50, parse: 20, transform: 10, sink: 20, failed: 0, per_sec: 0.5 },
      },
    },
  };
}

const stopped: Listed = { name: 'nightly', status: 'scheduled', live: null };

describe('svc top table', () => {
  it('a row per pipeline, a row per stage under a running one; a pipeline’s errors are its stages’', () => {
    const rows = topRows([running('p', 'closed'), stopped]);
    expect(rows.map((r) => [r.stage, r.name])).toEqual([
      [false, 'p'],
      [true, 'source (kafka)'],
      [true, 'transforms[0] (filter)'],
      [true, 'sinks[0] (elasticsearch)'],
      [true, 'dlq (local)'],
      [false, 'nightly'],
    ]);
    // 20 that did not decode, 10 the filter failed on, 20 writes failed for good.
    expect(rows[0]).toMatchObject({ in: 1000, out: 800, filtered: 150, dlq: 50, errors: 50, retries: 7 });
    expect(rows[2]).toMatchObject({ in: 980, out: 820, filtered: 150, errors: 10 });
    expect(rows[3]).toMatchObject({ in: 820, out: 800, errors: 20, retries: 7, out_s: 10 });
    expect(rows[5]).toEqual({ stage: false, name: 'nightly', status: 'scheduled' });
  });

  it('fits a narrow terminal: columns left out first, then names shortened, no line wider than the terminal', () => {
    const list = [running(long, 'closed'), stopped];
    const wide = topTable(list, { color: false });
    expect(wide[0]).toContain('RETRIES');
    expect(wide[1]!.startsWith(`${long}  running`)).toBe(true);
    for (const columns of [100, 80, 60, 40]) {
      const lines = topTable(list, { columns, color: false });
      for (const l of lines) expect(l.length, `${columns}: ${l}`).toBeLessThanOrEqual(columns);
    }
    const at80 = topTable(list, { columns: 80, color: false });
    expect(at80[0]).not.toContain('RETRIES');
    expect(at80[0]).toContain('ERRORS');
    expect(at80[1]).toMatch(/^a-pipeline-with-a-rather-\S*… {2}running/);
  });

  it('in colour: an open circuit, errors and dead letters stand out; the text is the same', () => {
    const list = [running('p', 'open')];
    const plain = topTable(list, { color: false });
    const coloured = topTable(list, { color: true });
    // eslint-disable-next-line no-control-regex
    expect(coloured.map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''))).toEqual(plain);
    const sink = coloured.find((l) => l.includes('sinks[0]'))!;
    expect(sink).toContain('\x1b[1;41;97mcircuit OPEN\x1b[0m');
    expect(coloured[1]).toContain('\x1b[32mrunning');
    expect(coloured[1]).toContain('\x1b[31m    50\x1b[0m'); // errors, right-aligned under ERRORS
    expect(coloured[1]).toContain('\x1b[33m 50\x1b[0m'); // dead letters, under DLQ
  });
});
