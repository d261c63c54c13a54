// A one-line progress display for long runs on a terminal; silent when stderr is not a TTY.
import type { WriteStream } from 'node:tty';
import type { RunProgress } from '../engine/runner.js';

const si = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n));
const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;

export function formatProgress(p: RunProgress, elapsedS: number): string {
  const rate = elapsedS > 0 ? ` · ${si(Math.round(p.records_in / elapsedS))} rec/s` : '';
  return `${si(p.records_in)} in · ${si(p.records_out)} out · ${mb(p.bytes_in)} read · ${p.units} unit${p.units === 1 ? '' : 's'}${p.unit ? ` (${p.unit})` : ''}${rate}`;
}

export function progressReporter(out: NodeJS.WriteStream | WriteStream, everyMs = 500) {
  const start = performance.now();
  let last = 0;
  let shown = false;
  return {
    update(p: RunProgress) {
      if (!out.isTTY) return;
      const now = performance.now();
      if (now - last < everyMs) return;
      last = now;
      shown = true;
      const line = formatProgress(p, (now - start) / 1000);
      out.write(`\r${line.slice(0, (out.columns ?? 120) - 1).padEnd(Math.min(out.columns ?? 120, 120) - 1)}`);
    },
    done() {
      if (shown) out.write('\n');
    },
  };
}
