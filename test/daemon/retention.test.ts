// Run history retention in a real daemon (svc serve in this process, SQLite): with small limits and
// a one-second purge interval, old runs disappear from GET /api/runs while the API keeps answering.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startRunRetention } from '../../src/daemon/retention.js';
import { openStore, type SqlStore } from '../../src/store/index.js';
import { tempDir } from '../helpers/fs.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { elapse, quiet, until } from '../helpers/wait.js';

const DAY_MS = 86_400_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

/** Finished runs of a pipeline, `count` of them, finished `age` ms ago and one ms apart. */
async function insertFinished(d: TestDaemon, pipeline: string, count: number, age: number) {
  const db = (d.store as SqlStore).db;
  // One clock reading: a millisecond passing between rows would give two runs the same finished_at.
  const now = Date.now();
  const rows = Array.from({ length: count }, (_, i) => {
    const finished = now - age - i;
    return {
      run_id: `${pipeline}-${String(i).padStart(5, '0')}`,
      pipeline,
      node_id: 'test-node',
      status: i % 7 === 0 ? 'failed' : 'success',
      started_at: new Date(finished - 1000).toISOString(),
      finished_at: new Date(finished).toISOString(),
      records_in: 1,
      records_out: 1,
      records_skipped: 0,
      bytes_in: 1,
      bytes_out: 1,
      dlq_count: 0,
      error: null,
      errors: '[]',
      duration_ms: 1000,
      pipeline_version: null,
    };
  });
  for (let i = 0; i < rows.length; i += 500)
    await db
      .insertInto('runs')
      .values(rows.slice(i, i + 500))
      .execute();
}

describe('run history retention in the daemon', () => {
  it('purges runs past the age limit and beyond the per-pipeline count in the background; running runs stay; the API keeps answering', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const d = await testDaemon(
      { SVC_RUN_HISTORY_MAX_AGE_DAYS: '7', SVC_RUN_HISTORY_MAX_RUNS_PER_PIPELINE: '50', SVC_RUN_HISTORY_PURGE_INTERVAL_SECONDS: '1' },
      { log },
    );
    expect(lines.some((l) => l.msg === 'run history retention' && l.max_age_days === 7 && l.max_runs_per_pipeline === 50)).toBe(true);

    await insertFinished(d, 'old', 3000, 30 * DAY_MS); // three batches and more, all past the age limit
    await insertFinished(d, 'busy', 120, 60_000); // recent, but beyond the count limit
    await insertFinished(d, 'quiet', 10, 60_000); // a noisy pipeline never evicts another's history
    await d.store.runs.start({ run_id: 'old-running', pipeline: 'old', node_id: 'test-node', started_at: ago(30 * DAY_MS) });

    // Until the purge has passed: every request is answered, and answered quickly.
    let requests = 0;
    let slowest = 0;
    const listed = async (pipeline: string) => {
      const t0 = performance.now();
      const [runs, health] = await Promise.all([d.call('GET', `/api/runs?pipeline=${pipeline}&limit=10000`), d.call('GET', '/api/health')]);
      slowest = Math.max(slowest, performance.now() - t0);
      requests++;
      expect(runs.status).toBe(200);
      expect(health.status).toBe(200);
      return runs.body as { run_id: string; status: string }[];
    };
    const oldLeft = (await until(
      async () => {
        const runs = await listed('old');
        return runs.length === 1 ? runs : undefined;
      },
      15_000,
      'one listed run of old',
      20,
    ))!;
    expect(oldLeft.map((r) => [r.run_id, r.status])).toEqual([['old-running', 'running']]);
    const busy = (await until(
      async () => {
        const runs = await listed('busy');
        return runs.length === 50 ? runs : undefined;
      },
      15_000,
      '50 listed runs of busy',
      20,
    ))!;
    // The newest 50 stay (run 0 finished last).
    expect(busy[0]!.run_id).toBe('busy-00000');
    expect(busy[49]!.run_id).toBe('busy-00049');
    expect(await listed('quiet')).toHaveLength(10);
    expect(requests).toBeGreaterThan(0);
    // Generous for a shared 2-core machine: a blocked API would take seconds, not this.
    expect(slowest).toBeLessThan(2000);

    // The pass logs what it removed once it ends (it may still be walking the other pipelines).
    const purged = () => lines.filter((l) => l.msg === 'run history purged');
    await until(() => purged().reduce((n, l) => n + (l.removed as number), 0) === 3000 + 70, 5000);
    expect(purged().every((l) => l.component === 'run-retention' && (l.removed as number) === (l.by_age as number) + (l.by_count as number))).toBe(true);
    expect((await d.call('GET', '/api/runs/old-00000')).status).toBe(404);
    expect((await d.call('GET', '/api/runs/old-running')).body.status).toBe('running');
  }, 30_000);

  it('0 and 0 disable retention and say so', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const d = await testDaemon(
      { SVC_RUN_HISTORY_MAX_AGE_DAYS: '0', SVC_RUN_HISTORY_MAX_RUNS_PER_PIPELINE: '0', SVC_RUN_HISTORY_PURGE_INTERVAL_SECONDS: '1' },
      { log },
    );
    expect(lines.some((l) => l.msg === 'run history retention disabled: history grows without bound')).toBe(true);
    await insertFinished(d, 'old', 5, 400 * DAY_MS);
    await elapse(1500); // a purge interval and more
    expect((await d.call('GET', '/api/runs?pipeline=old')).body).toHaveLength(5);
  });

  it('the defaults: 90 days, 100,000 runs per pipeline, a pass every hour', async () => {
    const d = await testDaemon();
    expect(d.settings.RUN_HISTORY_MAX_AGE_DAYS).toBe(90);
    expect(d.settings.RUN_HISTORY_MAX_RUNS_PER_PIPELINE).toBe(100_000);
    expect(d.settings.RUN_HISTORY_PURGE_INTERVAL_SECONDS).toBe(3600);
  });

  it('a failed pass is logged and the timer goes on; stop ends it', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const store = await openStore({ path: `${tempDir('svc-retention-')}/svc.db` });
    await store.close(); // every purge now fails
    const settings = { RUN_HISTORY_MAX_AGE_DAYS: 1, RUN_HISTORY_MAX_RUNS_PER_PIPELINE: 10, RUN_HISTORY_PURGE_INTERVAL_SECONDS: 1 };
    const retention = startRunRetention({ runs: store.runs, settings, log });
    try {
      const failed = () => lines.filter((l) => l.msg === 'run history purge failed; the next pass tries again');
      await until(() => failed().length >= 2, 5000);
      expect(await retention.purgeNow()).toBeUndefined();
    } finally {
      await retention.stop();
    }
    const after = lines.length;
    await quiet(1200);
    expect(lines.length).toBe(after);
  });

  it('a standby (not active) skips its passes', async () => {
    const d = await testDaemon();
    await insertFinished(d, 'old', 5, 400 * DAY_MS);
    const settings = { RUN_HISTORY_MAX_AGE_DAYS: 1, RUN_HISTORY_MAX_RUNS_PER_PIPELINE: 0, RUN_HISTORY_PURGE_INTERVAL_SECONDS: 1 };
    let active = false;
    const retention = startRunRetention({ runs: d.store.runs, settings, log: d.log, active: () => active });
    try {
      expect(await retention.purgeNow()).toBeUndefined();
      expect((await d.call('GET', '/api/runs?pipeline=old')).body).toHaveLength(5);
      active = true;
      expect(await retention.purgeNow()).toEqual({ byAge: 5, byCount: 0 });
    } finally {
      await retention.stop();
    }
  });
});
