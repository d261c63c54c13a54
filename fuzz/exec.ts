// One execution of a target on one input, classified: what the fuzz loop and the regression
// replay (test/fuzz-regressions/replay.test.ts) both judge by.
import type { Target } from './targets.js';
import { norm } from './targets.js';

/** The limits: a hang is over 1 s on an input under 64 KB; memory over 50x the input. */
export const HANG_MS = 1000;
export const MEMORY_FACTOR = 50;
/**
 * RSS moves by whole pages, arenas and JIT code whatever the input: growth under this floor is not
 * told apart from noise, so the 50x rule applies above it.
 */
export const MEMORY_FLOOR = 64 << 20;

export type Result = { kind: 'ok'; sig: string; ms: number; rssGrowth: number } | { kind: 'finding'; error: unknown; ms: number; rssGrowth: number };

export async function execOnce(t: Target, input: Buffer): Promise<Result> {
  const rss0 = process.memoryUsage.rss();
  const t0 = performance.now();
  let sig: string;
  try {
    const r = t.run(input);
    sig = typeof r === 'string' ? r : await r;
  } catch (e) {
    const ms = performance.now() - t0;
    const rssGrowth = process.memoryUsage.rss() - rss0;
    if (!t.expected(e)) return { kind: 'finding', error: e, ms, rssGrowth };
    sig = `throw:${(e as Error).name}:${norm((e as Error).message ?? String(e))}`;
  }
  return { kind: 'ok', sig, ms: performance.now() - t0, rssGrowth: process.memoryUsage.rss() - rss0 };
}

/** Over the memory rule for this input. */
export const tooMuchMemory = (growth: number, inputBytes: number) => growth > Math.max(MEMORY_FLOOR, MEMORY_FACTOR * inputBytes);

/**
 * What identifies one bug: the error class, its message up to the first colon (the rest often
 * quotes the input), and the first frame in src/ or a dependency (of the cause, when wrapped).
 */
export function errorSignature(e: unknown): string {
  const err = e instanceof Error ? e : new Error(String(e));
  const cause = err.cause instanceof Error ? err.cause : err;
  const frames = (cause.stack ?? '').split('\n');
  const frame = frames.find((l) => l.includes('/src/')) ?? frames.find((l) => l.includes('node_modules')) ?? '';
  return `${err.name}: ${norm(err.message.split(':')[0]!)} @ ${frame
    .trim()
    .replace(/:\d+\)?$/, '')
    .replace(/^.*\/(src|node_modules)\//, '$1/')}`;
}

/**
 * A feature without the words it copies from the input ("SD-ELEMENT [x@y: expected ..." quotes the
 * bad element): otherwise every new input would be a new feature and the corpus would fill with
 * noise. The input is compared with its numbers blanked, as the feature's are; a run of copied
 * words is one `~`.
 */
export const withoutEchoes = (feature: string, text: string) =>
  feature
    .split(' ')
    .map((w) => {
      const core = w.replace(/[:,;.]+$/, '');
      return core.length > 3 && text.includes(core) ? '~' : w;
    })
    .join(' ')
    .replace(/[~_]( [~_])+/g, '~');

/** The input as the features see it: numbers blanked (norm() in fuzz/targets.ts). */
export const echoText = (input: Buffer) => input.toString('latin1').replace(/\d+/g, '#');
