// File selection shared by the file sources (local, sftp, ftp): name globs and the three
// file-done guards that keep a source from reading a file its producer is still writing.
import { setTimeout as delay } from 'node:timers/promises';
import picomatch from 'picomatch';

/** What the guards need to know about a listed file. */
export interface FileStat {
  size: number;
  mtimeMs: number;
}

/**
 * A matcher for `file_pattern`, applied to the file name only (never the directory). `*` does
 * not match names starting with '.', as in a shell: hidden and temporary files are left alone.
 */
export function compileFilePattern(pattern: string): (name: string) => boolean {
  const isMatch = picomatch(pattern, { dot: false });
  return (name) => isMatch(name);
}

/**
 * `file_done_suffix`: the file's logical name (suffix stripped) when it carries the suffix,
 * undefined when the file is not done yet (or nothing is left after stripping). Without a
 * suffix every name is done as is.
 */
export function doneName(name: string, suffix: string | undefined): string | undefined {
  if (!suffix) return name;
  if (!name.endsWith(suffix) || name.length === suffix.length) return undefined;
  return name.slice(0, name.length - suffix.length);
}

/** `file_min_age_seconds`: true when the file was modified less than that long ago (or in the future). */
export function isTooYoung(file: FileStat, minAgeSeconds: number, nowMs = Date.now()): boolean {
  return minAgeSeconds > 0 && nowMs - file.mtimeMs < minAgeSeconds * 1000;
}

/**
 * `file_stability_seconds`: waits once, then keeps the files whose size and mtime did not change.
 * `restat` returns the new stat of each file in order (undefined when it is gone). One wait
 * covers the whole listing. Rejects with an AbortError when `signal` aborts during the wait.
 */
export async function keepStable<T extends FileStat>(
  files: T[],
  seconds: number,
  restat: (files: T[]) => Promise<(FileStat | undefined)[]>,
  signal?: AbortSignal,
): Promise<{ stable: T[]; changed: number; gone: number }> {
  if (seconds <= 0 || files.length === 0) return { stable: files, changed: 0, gone: 0 };
  await delay(seconds * 1000, undefined, { signal });
  const now = await restat(files);
  const stable: T[] = [];
  let changed = 0;
  let gone = 0;
  files.forEach((f, i) => {
    const s = now[i];
    if (!s) gone++;
    else if (s.size === f.size && s.mtimeMs === f.mtimeMs) stable.push(f);
    else changed++;
  });
  return { stable, changed, gone };
}

/** Counts files passed over on purpose, to report one message per reason per run. */
export class SkipTally {
  private counts = new Map<string, number>();

  /** `reason` completes "skipped N files ...", e.g. "already processed". */
  add(reason: string, n = 1): void {
    if (n > 0) this.counts.set(reason, (this.counts.get(reason) ?? 0) + n);
  }

  messages(): string[] {
    return [...this.counts].map(([reason, n]) => `skipped ${n} ${n === 1 ? 'file' : 'files'} ${reason}`);
  }
}

export const isAbortError = (e: unknown): boolean => e instanceof Error && e.name === 'AbortError';
