// tap-overhead (issue 29): a stream at its ceiling (mqtt-ingest's: QoS 1 messages drained from a
// persistent session on a private Mosquitto into an NDJSON file) with one tap attached against none,
// in the same run. Both legs follow the run's progress (stage figures counted, as in the daemon);
// the tap is the worst case the API allows: stage `transforms`, 1,000 records per second, no end.
// Rounds alternate which leg goes first, so a machine that slows down during the run hurts both.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TapHub } from '../src/engine/tap.js';
import { checkSequenceFile } from './sequence.js';
import { benchBroker, fill, makeSourceSession, measureSource } from './mqtt-scenarios.js';
import type { Measured } from './scenarios.js';

const MESSAGES = Number(process.env.BENCH_MQTT_MESSAGES ?? 200_000);
const ROUNDS = Number(process.env.SVC_BENCH_ROUNDS ?? 3);
const TAP_RATE = 1000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function tapOverhead(): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-tap-'));
  const broker = await benchBroker();
  const legs = { tap: [] as { rate: number; cpu: number }[], none: [] as { rate: number; cpu: number }[] };
  let tapped = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const ids = { tap: `svc-bench-tap-${round}`, none: `svc-bench-none-${round}` };
      // Both sessions exist before the messages are published: each leg drains the same messages.
      for (const id of Object.values(ids)) await makeSourceSession(broker, id, dir);
      const bytes = await fill(broker, MESSAGES);
      const order: ('tap' | 'none')[] = round % 2 === 0 ? ['tap', 'none'] : ['none', 'tap'];
      for (const leg of order) {
        const hub = new TapHub();
        if (leg === 'tap')
          hub.attach(
            { stage: 'transforms', rate: TAP_RATE, limit: Number.MAX_SAFE_INTEGER },
            (lines) => (tapped += lines.length),
            () => {},
          );
        const r = await measureSource(broker, ids[leg], dir, bytes, { run: { tap: hub, onProgress: () => {} } });
        const got = await checkSequenceFile(r.file, MESSAGES);
        if (got.missing) throw new Error(`${leg} leg lost ${got.missing} messages`);
        legs[leg].push({ rate: MESSAGES / r.seconds, cpu: MESSAGES / r.cpuSeconds });
      }
    }
  } finally {
    await broker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const med = (leg: 'tap' | 'none', k: 'rate' | 'cpu') => Math.round(median(legs[leg].map((m) => m[k])));
  return {
    messages: MESSAGES,
    tap_rate_per_sec: TAP_RATE,
    msgs_per_sec_tap: med('tap', 'rate'),
    msgs_per_sec_no_tap: med('none', 'rate'),
    ratio_tap_vs_none: Number((med('tap', 'rate') / med('none', 'rate')).toFixed(3)),
    msgs_per_cpu_sec_tap: med('tap', 'cpu'),
    msgs_per_cpu_sec_no_tap: med('none', 'cpu'),
    cpu_ratio_tap_vs_none: Number((med('tap', 'cpu') / med('none', 'cpu')).toFixed(3)),
    goal_tap_vs_none: 0.95,
    records_tapped: tapped,
    runs: JSON.stringify({ tap: legs.tap.map((m) => Math.round(m.rate)), none: legs.none.map((m) => Math.round(m.rate)) }),
  };
}
