// Side-by-side measurements in one run: our scenario and its reference, each in a fresh process,
// alternated over a few rounds so that a machine that speeds up or slows down mid-run weighs on both.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Measured } from './scenarios.js';

const runner = fileURLToPath(new URL('./run.js', import.meta.url));

/** One measurement of scenario `name` in its own child process (the JSON line run.ts prints). */
export function childMeasure(name: string, threads = 1): Measured {
  const line = execFileSync(process.execPath, [runner, '--child', name, String(threads)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(line) as Measured;
}

/** A reference script (bench/*.mjs, run from the repository root) that prints one JSON line. */
export function scriptMeasure(script: string, args: string[] = []): Measured {
  const line = execFileSync(process.execPath, [script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(line.trim().split('\n').pop()!) as Measured;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export const ratio = (a: number, b: number) => Number((a / b).toFixed(2));

/**
 * `rounds` alternations of the named measurements; the median of each one's `field`, and every
 * figure seen (so a reader sees the spread).
 */
export function alternate(rounds: number, legs: Record<string, () => Measured>, field = 'records_per_sec') {
  const seen: Record<string, number[]> = {};
  const last: Record<string, Measured> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [leg, measure] of Object.entries(legs)) {
      const m = measure();
      (seen[leg] ??= []).push(Number(m[field]));
      last[leg] = m;
    }
  }
  const medians = Object.fromEntries(Object.entries(seen).map(([leg, xs]) => [leg, median(xs)]));
  return { medians, seen, last };
}
