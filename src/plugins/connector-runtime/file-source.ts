// What every file and object source shares (local, sftp, ftp, s3, gcs, azure_blob): the selection
// fields and their lint, the file-done guards, skip_processed, and finalizing a file (remember, move
// or delete) only after every record from it was delivered. A source supplies a `FileStore` that
// lists, reads, moves and deletes on its peer; it never decides what is read or when it is final.
import { Type } from '@sinclair/typebox';
import { compileFilePattern, doneName, isAbortError, isTooYoung, keepStable, SkipTally, type FileStat } from './file-guards.js';
import type { LintIssue, PluginContext, SourceMeta, SourceUnit } from '../types.js';

/** A file or object as its store lists it. */
export interface ListedFile extends FileStat {
  /** Full path or key at the store, as read(), move() and remove() take it. */
  path: string;
  /** Directory relative to the source's root, '/'-separated, '' at the top. */
  relDir: string;
  /** Name as stored (with any done suffix). */
  name: string;
}

/** A selected file: its logical name is the name with file_done_suffix stripped. */
export interface SelectedFile<F extends ListedFile = ListedFile> {
  file: F;
  logical: string;
}

export interface FileStore<F extends ListedFile = ListedFile> {
  /** Every file under the root (recursion is the store's business), in any order. */
  list(signal: AbortSignal): Promise<F[]>;
  /** Fresh size and mtime of each file, for file_stability_seconds (undefined when gone). */
  restat(files: F[], signal: AbortSignal): Promise<(FileStat | undefined)[]>;
  /** The file's bytes, streamed (never held whole). */
  read(file: F, signal: AbortSignal): AsyncIterable<Buffer>;
  /** move_after_read: into `destDir` joined with the file's relDir, never replacing a file there. */
  move?(file: F, destDir: string): Promise<void>;
  remove?(file: F): Promise<void>;
  /** The skip_processed key: what makes this file this version (path, size, mtime, an ETag...). */
  processedKey(file: F): string;
  /** Extra unit metadata beside the standard source_* fields (bucket, host...). */
  meta?(file: F): SourceMeta;
}

/** The selection and finalizing fields, as the source's config names them (all optional here). */
export interface FileSelection {
  file_pattern?: string;
  move_after_read?: string;
  delete_after_read?: boolean;
  skip_processed?: boolean;
  file_stability_seconds?: number;
  file_min_age_seconds?: number;
  file_done_suffix?: string;
}

/** The schema fields of doc 3's file sources, in one place (local, sftp, ftp). */
export const fileSelectionFields = {
  file_pattern: Type.String({
    default: '*',
    description: 'Glob matched against the file name only, e.g. *.csv or A*.{xml,gz}; * skips names starting with a dot.',
  }),
  move_after_read: Type.Optional(
    Type.String({ minLength: 1, description: 'Move each delivered file into this directory (created if missing, sub-path kept, never overwrites).' }),
  ),
  delete_after_read: Type.Boolean({ default: false, description: 'Delete each file once all its records are delivered.' }),
  skip_processed: Type.Boolean({ default: false, description: 'Skip files delivered by an earlier run with the same path, size and modification time.' }),
};

/** The three file-done guards (doc 3), shared by the file sources. */
export const fileGuardFields = {
  file_stability_seconds: Type.Number({
    minimum: 0,
    default: 0,
    description: 'Read only files whose size and mtime stay the same across two scans this many seconds apart.',
  }),
  file_min_age_seconds: Type.Number({ minimum: 0, default: 0, description: 'Skip files modified less than this many seconds ago.' }),
  file_done_suffix: Type.Optional(
    Type.String({ minLength: 1, description: 'Read only files whose name ends with this suffix (e.g. .done); it is stripped from source_filename.' }),
  ),
};

/** Cross-field rules of the selection fields. `root` is the directory read, when moves could land in it. */
export function lintFileSelection(c: FileSelection, sameDir?: (a: string) => boolean): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.move_after_read !== undefined && c.delete_after_read) {
    issues.push({ path: 'delete_after_read', message: 'move_after_read and delete_after_read exclude each other; choose one' });
  }
  if (c.move_after_read !== undefined && sameDir?.(c.move_after_read)) {
    issues.push({ path: 'move_after_read', message: 'move_after_read must be a different directory than the one read' });
  }
  if (c.file_pattern !== undefined && /[/\\]/.test(c.file_pattern)) {
    issues.push({
      path: 'file_pattern',
      message: 'file_pattern matches file names only and must not contain a path separator; use recursive for subdirectories',
    });
  }
  return issues;
}

/**
 * The units of one run: lists the store, applies the name filters and the guards, skips what was
 * processed, and yields one unit per file in path order. `notes` receives one message per reason
 * files were passed over. A unit's done(true) remembers the file (skip_processed) first, then moves
 * or deletes it; done(false) leaves it untouched, so the next run reads it again.
 */
export async function* fileUnits<F extends ListedFile>(
  store: FileStore<F>,
  c: FileSelection,
  ctx: Pick<PluginContext, 'processed' | 'skipProcessed'>,
  signal: AbortSignal,
  notes: string[],
): AsyncIterable<SourceUnit> {
  const matches = compileFilePattern(c.file_pattern ?? '*');
  const skipProcessed = c.skip_processed === true || ctx.skipProcessed;
  const tally = new SkipTally();
  const candidates: (F & { logical: string })[] = [];
  const now = Date.now();
  for (const f of await store.list(signal)) {
    const logical = doneName(f.name, c.file_done_suffix);
    if (logical === undefined || !matches(logical)) continue;
    if (isTooYoung(f, c.file_min_age_seconds ?? 0, now)) tally.add(`younger than file_min_age_seconds (${c.file_min_age_seconds} s)`);
    else if (skipProcessed && (await ctx.processed.has(store.processedKey(f)))) tally.add('already processed');
    else candidates.push(Object.assign(f, { logical }));
  }
  candidates.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  let ready: typeof candidates;
  try {
    const seconds = c.file_stability_seconds ?? 0;
    const { stable, changed } = await keepStable(candidates, seconds, (fs) => store.restat(fs, signal), signal);
    tally.add(`still changing after file_stability_seconds (${seconds} s)`, changed);
    ready = stable;
  } catch (e) {
    if (isAbortError(e)) return; // stopped while waiting: read nothing
    throw e;
  } finally {
    notes.push(...tally.messages());
  }
  for (const f of ready) {
    if (signal.aborted) return;
    yield {
      meta: {
        ...store.meta?.(f),
        source_filename: f.logical,
        source_path: f.path,
        source_dir: dirOf(f.path),
        source_relative_dir: f.relDir,
        source_size: f.size,
        source_mtime: new Date(f.mtimeMs).toISOString(),
      },
      size: f.size,
      read: () => store.read(f, signal),
      done: async (delivered) => {
        if (!delivered) return;
        // Remember first: if the move or delete fails, the next run still does not duplicate it.
        if (skipProcessed) await ctx.processed.add(store.processedKey(f));
        if (c.move_after_read !== undefined) await store.move!(f, c.move_after_read);
        else if (c.delete_after_read) await store.remove!(f);
      },
    };
  }
}

const dirOf = (p: string): string => {
  const i = Math.max(p.lastIndexOf('/'), p.lastIndexOf('\\'));
  return i <= 0 ? (i === 0 ? p.slice(0, 1) : '') : p.slice(0, i);
};

/**
 * `name` with `_<n>` before its extension (before the done suffix's extension, so `a.csv.done`
 * becomes `a_1.csv.done`): the name a move takes when the target name is taken.
 */
export function numberedName(name: string, n: number, doneSuffix?: string): string {
  const suffix = doneSuffix && name.endsWith(doneSuffix) && name.length > doneSuffix.length ? doneSuffix : '';
  const base = name.slice(0, name.length - suffix.length);
  const dot = base.lastIndexOf('.');
  const ext = dot > 0 ? base.slice(dot) : '';
  return `${base.slice(0, base.length - ext.length)}_${n}${ext}${suffix}`;
}
