// Source `local`: reads the files of a directory (or one file), one unit per file, streamed.
// Delivered files are moved, deleted and/or remembered; undelivered ones are left untouched.
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { SourceError, errorMessage } from '../../errors.js';
import { compileFilePattern, doneName, isAbortError, isTooYoung, keepStable, SkipTally, type FileStat } from '../common/file-guards.js';
import { defineSource, type LintIssue, type PluginContext, type Source, type SourceUnit } from '../types.js';

const READ_CHUNK = 1024 * 1024;

export const config = Type.Object({
  path: Type.String({ minLength: 1, description: 'Directory to read, or a single file.' }),
  file_pattern: Type.String({ default: '*', description: 'Glob matched against the file name only, e.g. *.csv or A*.{xml,gz}; * skips names starting with a dot.' }),
  recursive: Type.Boolean({ default: false, description: 'Also read files in subdirectories (symbolic links to directories are not followed).' }),
  move_after_read: Type.Optional(Type.String({ minLength: 1, description: 'Move each delivered file into this directory (created if missing, sub-path kept, never overwrites).' })),
  delete_after_read: Type.Boolean({ default: false, description: 'Delete each file once all its records are delivered.' }),
  skip_processed: Type.Boolean({ default: false, description: 'Skip files delivered by an earlier run with the same path, size and modification time.' }),
  file_stability_seconds: Type.Number({ minimum: 0, default: 0, description: 'Read only files whose size and mtime stay the same across two scans this many seconds apart.' }),
  file_min_age_seconds: Type.Number({ minimum: 0, default: 0, description: 'Skip files modified less than this many seconds ago.' }),
  file_done_suffix: Type.Optional(Type.String({ minLength: 1, description: 'Read only files whose name ends with this suffix (e.g. .done); it is stripped from source_filename.' })),
}, { additionalProperties: false });

export type LocalSourceConfig = Static<typeof config>;

function lint(c: LocalSourceConfig): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.move_after_read !== undefined && c.delete_after_read) {
    issues.push({ path: 'delete_after_read', message: 'move_after_read and delete_after_read exclude each other; choose one' });
  }
  if (c.move_after_read !== undefined && path.resolve(c.move_after_read) === path.resolve(c.path)) {
    issues.push({ path: 'move_after_read', message: 'move_after_read must be a different directory than path' });
  }
  if (/[/\\]/.test(c.file_pattern)) {
    issues.push({ path: 'file_pattern', message: 'file_pattern matches file names only and must not contain a path separator; use recursive for subdirectories' });
  }
  return issues;
}

/** A file that passed the name filters, as listed. */
interface Listed extends FileStat {
  abs: string;
  /** Directory relative to the root, '/'-separated, '' at the top. */
  relDir: string;
  /** Real file name on disk. */
  name: string;
  /** Name with file_done_suffix stripped. */
  logical: string;
}

class LocalSource implements Source {
  notes: string[] = [];
  private readonly root: string;
  private readonly moveDir?: string;
  private readonly matches: (name: string) => boolean;

  constructor(private readonly c: LocalSourceConfig, private readonly ctx: PluginContext) {
    this.root = path.resolve(c.path);
    this.moveDir = c.move_after_read === undefined ? undefined : path.resolve(c.move_after_read);
    this.matches = compileFilePattern(c.file_pattern);
  }

  async *units(signal: AbortSignal): AsyncIterable<SourceUnit> {
    const stop = AbortSignal.any([signal, this.ctx.signal]);
    this.notes.length = 0;
    const tally = new SkipTally();
    const candidates: Listed[] = [];
    const now = Date.now();
    for (const f of await this.list()) {
      if (isTooYoung(f, this.c.file_min_age_seconds, now)) tally.add(`younger than file_min_age_seconds (${this.c.file_min_age_seconds} s)`);
      else if (this.skipProcessed && (await this.ctx.processed.has(processedKey(f)))) tally.add('already processed');
      else candidates.push(f);
    }
    let ready: Listed[];
    try {
      const { stable, changed } = await keepStable(candidates, this.c.file_stability_seconds, restatAll, stop);
      tally.add(`still changing after file_stability_seconds (${this.c.file_stability_seconds} s)`, changed);
      ready = stable;
    } catch (e) {
      if (isAbortError(e)) return; // stopped while waiting: read nothing
      throw e;
    } finally {
      this.notes.push(...tally.messages());
    }
    for (const f of ready) {
      if (stop.aborted) return;
      yield this.unit(f, stop);
    }
  }

  private get skipProcessed(): boolean {
    return this.c.skip_processed || this.ctx.skipProcessed;
  }

  /** Files whose names pass file_done_suffix and file_pattern, in path order. */
  private async list(): Promise<Listed[]> {
    let stat;
    try {
      stat = await fs.stat(this.root);
      await fs.access(this.root, stat.isDirectory() ? fs.constants.R_OK | fs.constants.X_OK : fs.constants.R_OK);
    } catch (e) {
      throw new SourceError(unreadableMessage(this.root, e));
    }
    const found: { abs: string; relDir: string }[] = [];
    if (stat.isDirectory()) await this.walk(this.root, '', found);
    else found.push({ abs: this.root, relDir: '' });

    const listed: Listed[] = [];
    for (const { abs, relDir } of found) {
      const name = path.basename(abs);
      const logical = doneName(name, this.c.file_done_suffix);
      if (logical === undefined || !this.matches(logical)) continue;
      const s = await statFile(abs);
      if (s) listed.push({ abs, relDir, name, logical, size: s.size, mtimeMs: s.mtimeMs });
    }
    return listed.sort((a, b) => (a.abs < b.abs ? -1 : a.abs > b.abs ? 1 : 0));
  }

  private async walk(dir: string, relDir: string, out: { abs: string; relDir: string }[]): Promise<void> {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (e) {
      if (dir === this.root) throw new SourceError(unreadableMessage(dir, e));
      this.notes.push(`skipped unreadable directory ${dir}: ${errorMessage(e)}`);
      return;
    }
    for (const e of entries) {
      const abs = path.join(dir, e.name);
      // Symbolic links count as files when they point at one; linked directories are not followed.
      if (e.isFile() || e.isSymbolicLink()) out.push({ abs, relDir });
      // Never re-read what this source moved away.
      else if (e.isDirectory() && this.c.recursive && abs !== this.moveDir) {
        await this.walk(abs, relDir ? `${relDir}/${e.name}` : e.name, out);
      }
    }
  }

  private unit(f: Listed, signal: AbortSignal): SourceUnit {
    return {
      meta: {
        source_filename: f.logical,
        source_path: f.abs,
        source_dir: path.dirname(f.abs),
        source_relative_dir: f.relDir,
        source_size: f.size,
        source_mtime: new Date(f.mtimeMs).toISOString(),
      },
      size: f.size,
      read: () => createReadStream(f.abs, { highWaterMark: READ_CHUNK, signal }),
      done: async (delivered) => {
        if (!delivered) return;
        // Remember first: if the move or delete fails, the next run still does not duplicate it.
        if (this.skipProcessed) await this.ctx.processed.add(processedKey(f));
        if (this.moveDir !== undefined) await moveNoClobber(f.abs, path.join(this.moveDir, f.relDir), f.name, this.c.file_done_suffix);
        else if (this.c.delete_after_read) await fs.unlink(f.abs);
      },
    };
  }
}

/** Path, size and mtime: a file rewritten in place is read again. */
export const processedKey = (f: { abs: string } & FileStat): string => `${f.abs}|${f.size}|${f.mtimeMs}`;

async function statFile(abs: string): Promise<FileStat | undefined> {
  try {
    const s = await fs.stat(abs);
    return s.isFile() ? { size: s.size, mtimeMs: s.mtimeMs } : undefined;
  } catch {
    return undefined; // vanished or a dangling link: nothing to read
  }
}

const restatAll = (files: Listed[]): Promise<(FileStat | undefined)[]> => Promise.all(files.map((f) => statFile(f.abs)));

function unreadableMessage(p: string, e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return `local source: path ${p} does not exist; create it or correct 'path'`;
  if (code === 'EACCES' || code === 'EPERM') return `local source: path ${p} is not readable (permission denied); grant the svc user read access or correct 'path'`;
  return `local source: cannot read path ${p}: ${errorMessage(e)}`;
}

/**
 * Moves `name` from its directory into `destDir` without ever replacing a file there: a taken
 * name gets `_1`, `_2`, ... before its extension (before the done suffix's extension, so
 * `a.csv.done` becomes `a_1.csv.done`). `link` fails atomically on an existing name; across
 * file systems, an exclusive copy does the same.
 */
async function moveNoClobber(src: string, destDir: string, name: string, doneSuffix?: string): Promise<string> {
  await fs.mkdir(destDir, { recursive: true });
  for (let n = 0; ; n++) {
    const dest = path.join(destDir, n === 0 ? name : numbered(name, n, doneSuffix));
    try {
      await fs.link(src, dest);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      try {
        await fs.copyFile(src, dest, fs.constants.COPYFILE_EXCL);
      } catch (e2) {
        if ((e2 as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw e2;
      }
    }
    await fs.unlink(src);
    return dest;
  }
}

function numbered(name: string, n: number, doneSuffix?: string): string {
  const suffix = doneSuffix && name.endsWith(doneSuffix) && name.length > doneSuffix.length ? doneSuffix : '';
  const base = name.slice(0, name.length - suffix.length);
  const ext = path.extname(base);
  return `${base.slice(0, base.length - ext.length)}_${n}${ext}${suffix}`;
}

export default defineSource({
  key: 'local',
  summary: 'Read files from a local directory, one unit per file, with move, delete and skip-processed handling.',
  mode: 'batch',
  status: 'stable',
  delivery: { guarantee: 'at-least-once', why: 'a file is moved, deleted or marked processed only after every record from it was written (and the sinks flushed) or dead-lettered; a failed run leaves it in place.' },
  config,
  lint,
  async test(c) {
    try {
      await fs.readdir(c.path);
    } catch (e) {
      throw new Error(unreadableMessage(c.path, e));
    }
  },
  examples: [
    {
      title: 'CSV files, moved to an archive after delivery',
      yaml: 'type: local\npath: /data/in\nfile_pattern: "*.csv"\nmove_after_read: /data/archive\n',
    },
    {
      title: 'PM XML tree, only files whose producer renamed them to *.done',
      yaml: 'type: local\npath: /data/pm\nfile_pattern: "A*.xml"\nrecursive: true\nfile_done_suffix: .done\nskip_processed: true\n',
    },
    {
      title: 'Files dropped by a slow uploader, deleted after delivery',
      yaml: 'type: local\npath: /data/drop\nfile_min_age_seconds: 30\nfile_stability_seconds: 5\ndelete_after_read: true\n',
    },
  ],
  create: (c, ctx) => new LocalSource(c, ctx),
});
