// Source `local`: reads the files of a directory (or one file), one unit per file, streamed.
// Delivered files are moved, deleted and/or remembered; undelivered ones are left untouched.
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { SourceError, errorMessage } from '../../../core/errors.js';
import type { FileStat } from '../../connector-runtime/file-guards.js';
import {
  fileGuardFields,
  fileSelectionFields,
  fileUnits,
  lintFileSelection,
  numberedName,
  type FileStore,
  type ListedFile,
} from '../../connector-runtime/file-source.js';
import { defineSource, type LintIssue, type PluginContext, type Source, type SourceUnit } from '../../types.js';

const READ_CHUNK = 1024 * 1024;

export const config = Type.Object(
  {
    path: Type.String({ minLength: 1, description: 'Directory to read, or a single file.' }),
    file_pattern: fileSelectionFields.file_pattern,
    recursive: Type.Boolean({ default: false, description: 'Also read files in subdirectories (symbolic links to directories are not followed).' }),
    move_after_read: fileSelectionFields.move_after_read,
    delete_after_read: fileSelectionFields.delete_after_read,
    skip_processed: fileSelectionFields.skip_processed,
    ...fileGuardFields,
  },
  { additionalProperties: false },
);

export type LocalSourceConfig = Static<typeof config>;

const lint = (c: LocalSourceConfig): LintIssue[] => lintFileSelection(c, (dir) => path.resolve(dir) === path.resolve(c.path));

type LocalFile = ListedFile;

class LocalSource implements Source, FileStore<LocalFile> {
  notes: string[] = [];
  private readonly root: string;
  private readonly moveDir?: string;

  constructor(
    private readonly c: LocalSourceConfig,
    private readonly ctx: PluginContext,
  ) {
    this.root = path.resolve(c.path);
    this.moveDir = c.move_after_read === undefined ? undefined : path.resolve(c.move_after_read);
  }

  units(signal: AbortSignal): AsyncIterable<SourceUnit> {
    this.notes.length = 0;
    return fileUnits(this, this.c, this.ctx, AbortSignal.any([signal, this.ctx.signal]), this.notes);
  }

  async list(): Promise<LocalFile[]> {
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
    const listed: LocalFile[] = [];
    for (const { abs, relDir } of found) {
      const s = await statFile(abs);
      if (s) listed.push({ path: abs, relDir, name: path.basename(abs), size: s.size, mtimeMs: s.mtimeMs });
    }
    return listed;
  }

  restat(files: LocalFile[]): Promise<(FileStat | undefined)[]> {
    return Promise.all(files.map((f) => statFile(f.path)));
  }

  read(f: LocalFile, signal: AbortSignal): AsyncIterable<Buffer> {
    return createReadStream(f.path, { highWaterMark: READ_CHUNK, signal });
  }

  async move(f: LocalFile): Promise<void> {
    await moveNoClobber(f.path, path.join(this.moveDir!, f.relDir), f.name, this.c.file_done_suffix);
  }

  remove(f: LocalFile): Promise<void> {
    return fs.unlink(f.path);
  }

  processedKey(f: LocalFile): string {
    return processedKey({ abs: f.path, size: f.size, mtimeMs: f.mtimeMs });
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

function unreadableMessage(p: string, e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return `local source: path ${p} does not exist; create it or correct 'path'`;
  if (code === 'EACCES' || code === 'EPERM')
    return `local source: path ${p} is not readable (permission denied); grant the svc user read access or correct 'path'`;
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
    const dest = path.join(destDir, n === 0 ? name : numberedName(name, n, doneSuffix));
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

export default defineSource({
  key: 'local',
  summary: 'Read files from a local directory, one unit per file, with move, delete and skip-processed handling.',
  mode: 'batch',
  status: 'stable',
  delivery: {
    guarantee: 'at-least-once',
    why: 'a file is moved, deleted or marked processed only after every record from it was written (and the sinks flushed) or dead-lettered; a failed run leaves it in place.',
  },
  config,
  lint,
  async test(c) {
    try {
      await fs.readdir(c.path);
    } catch (e) {
      throw new Error(unreadableMessage(c.path, e), { cause: e });
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
