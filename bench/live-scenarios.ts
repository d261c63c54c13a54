// live-counters (issue 29): ndjson-basic run by a real daemon's pipeline manager (the run's progress
// reports, its sampling timer, the metrics and the writes of its row), with SVC_LIVE_COUNTERS on
// against the same code with it off, each leg in a fresh process (compare.ts alternates them).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startDaemon } from '../src/daemon/daemon.js';
import { silentLogger } from '../src/observability/log.js';
import { loadSettings } from '../src/settings.js';
import { ndjsonFile } from './data.js';
import type { Measured } from './scenarios.js';

const RECORDS = 1_000_000;

/** One manual run of ndjson-basic's pipeline through a daemon with live counters on or off. */
export async function liveCountersLeg(on: boolean): Promise<Measured> {
  const input = await ndjsonFile(RECORDS);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-live-'));
  const out = join(dir, 'out');
  mkdirSync(out);
  const settings = loadSettings({
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_DB_PATH: join(dir, 'svc.db'),
    SVC_PIPELINE_DIR: join(dir, 'none'),
    SVC_MIB_DIR: join(dir, 'mibs'),
    SVC_MIB_SOURCE_DIR: join(dir, 'mib-sources'),
    SVC_NODE_ID: 'bench',
    SVC_LIVE_COUNTERS: on ? '1' : '0',
  });
  const d = await startDaemon({ settings, log: silentLogger });
  try {
    await d.manager.register(
      `version: "1"
pipeline:
  name: bench-live
  schedule: { type: manual }
  thread_workers: 1
  source: { type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: "*.ndjson" }
  serializer_in: { type: ndjson }
  transforms:
    - { type: rename, fields: { ifInOctets: in_octets, ifOutOctets: out_octets } }
    - { type: cast, fields: { ifIndex: int } }
    - { type: filter, expression: ifOperStatus == 1 }
  serializer_out: { type: ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: out.ndjson }
`,
      { origin: 'api' },
    );
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await d.manager.runNow('bench-live');
    const record = await d.manager.get('bench-live').active!.done;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    if (record.status !== 'success' || record.records_in !== RECORDS) throw new Error(`bench run failed: ${JSON.stringify(record)}`);
    return {
      records: record.records_in,
      seconds: Number(seconds.toFixed(3)),
      records_per_sec: Math.round(record.records_in / seconds),
      // CPU time (all threads) is steadier than wall-clock on a machine shared with other work.
      cpu_seconds: Number(cpuSeconds.toFixed(3)),
      records_per_cpu_sec: Math.round(record.records_in / cpuSeconds),
      live_counters: on ? 1 : 0,
    };
  } finally {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
