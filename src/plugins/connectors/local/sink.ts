// Sink `local`: writes encoded batches to files under a directory. `append` keeps one open file
// per expanded name for the run; `single` writes one file per source unit through a hidden
// temporary file renamed into place. Naming, rolling and the serializer's framing are the shared
// RollingFileSink's (connector-runtime/file-sink.ts); this module only does the file-system I/O.
import { randomBytes, randomUUID } from 'node:crypto';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { WriteError, errorMessage } from '../../../core/errors.js';
import { fileModeField, lintTemplateField, rollingFields, RollingFileSink, type FileTarget, type OutFile } from '../../connector-runtime/file-sink.js';
import { defineSink, type LintIssue } from '../../types.js';
import { syncDir } from '../../../util/durable.js';
import { localDlqReader } from './dlq-reader.js';

export const config = Type.Object(
  {
    path: Type.String({ minLength: 1, description: 'Directory the files are written to; created if missing.' }),
    filename_template: Type.String({
      minLength: 1,
      default: '{pipeline}_{timestamp}.bin',
      description: 'File name under path (may contain / for subdirectories); tokens such as {pipeline}, {timestamp}, {part}, {source_stem}, {field.<name>}.',
    }),
    file_mode: fileModeField,
    overwrite: Type.Boolean({ default: true, description: 'single mode: replace an existing file; false fails the write instead.' }),
    ...rollingFields,
  },
  { additionalProperties: false },
);

export type LocalSinkConfig = Static<typeof config>;

function lint(c: LocalSinkConfig): LintIssue[] {
  const issues = lintTemplateField(c.filename_template, 'filename_template');
  if (c.overwrite === false && c.file_mode !== 'single') {
    issues.push({ path: 'overwrite', message: 'overwrite applies to file_mode: single only; remove it or set file_mode: single' });
  }
  return issues;
}

/** Errors that retrying the same write cannot fix. */
const PERMANENT = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'EEXIST', 'ELOOP', 'EINVAL']);

/** Files under a directory: appended in place, or written to a hidden temporary and renamed into place. */
class LocalFiles implements FileTarget {
  readonly label = 'local sink';
  private readonly root: string;
  private readonly madeDirs = new Set<string>();

  constructor(dir: string) {
    this.root = path.resolve(dir);
  }

  where(rel: string): string {
    return path.join(this.root, rel);
  }

  private async dirFor(file: string): Promise<void> {
    const dir = path.dirname(file);
    if (this.madeDirs.has(dir)) return;
    await fs.mkdir(dir, { recursive: true });
    this.madeDirs.add(dir);
  }

  async openAppend(rel: string): Promise<OutFile> {
    const file = this.where(rel);
    return guarded(file, async () => {
      await this.dirFor(file);
      const fh = await fs.open(file, 'a+');
      const size = await fh.stat().then(
        (s) => s.size,
        async (e: unknown) => {
          await fh.close().catch(() => undefined);
          throw e;
        },
      );
      return new LocalFile(fh, file, file, size, false);
    });
  }

  async openNew(rel: string, overwrite: boolean): Promise<OutFile> {
    const file = this.where(rel);
    return guarded(file, async () => {
      await this.dirFor(file);
      if (!overwrite && (await exists(file))) throw new WriteError(`local sink: ${file} already exists and overwrite is false`, false);
      const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
      return new LocalFile(await fs.open(temp, 'ax+'), temp, file, 0, true, overwrite);
    });
  }
}

class LocalFile implements OutFile {
  private dirSynced = false;

  constructor(
    private readonly fh: FileHandle,
    /** Where bytes go: the final path (append) or a hidden temporary beside it (new). */
    private readonly writePath: string,
    private readonly finalPath: string,
    public size: number,
    private readonly isNew: boolean,
    private readonly overwrite = true,
  ) {}

  write(buf: Buffer): Promise<void> {
    return guarded(this.writePath, async () => {
      for (let off = 0; off < buf.length; ) off += (await this.fh.write(buf, off)).bytesWritten;
      this.size += buf.length;
    });
  }

  async readEnd(n: number): Promise<Buffer> {
    const end = Buffer.alloc(n);
    const { bytesRead } = await this.fh.read(end, 0, n, Math.max(0, this.size - n));
    return end.subarray(0, bytesRead);
  }

  async truncate(size: number): Promise<void> {
    await this.fh.truncate(size);
    this.size = size;
  }

  sync(): Promise<void> {
    return guarded(this.writePath, async () => {
      await this.fh.sync();
      // A temporary's own name need not survive a crash: publish() syncs the directory after the rename.
      if (!this.dirSynced && !this.isNew) {
        await syncDir(path.dirname(this.writePath));
        this.dirSynced = true;
      }
    });
  }

  async finish(): Promise<void> {
    try {
      await this.sync();
    } finally {
      await this.fh.close().catch(() => undefined);
    }
    if (this.isNew) await guarded(this.finalPath, () => this.publish());
  }

  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    if (this.isNew) await fs.unlink(this.writePath).catch(() => undefined);
  }

  private async publish(): Promise<void> {
    if (this.size === 0) {
      await fs.unlink(this.writePath); // nothing was written: publish nothing
      return;
    }
    if (this.overwrite) {
      await fs.rename(this.writePath, this.finalPath);
    } else {
      // link refuses an existing name atomically, unlike rename.
      try {
        await fs.link(this.writePath, this.finalPath);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        throw new WriteError(
          `local sink: ${this.finalPath} already exists and overwrite is false; its records were not written (set overwrite: true, or put {timestamp} or {run_id} in filename_template)`,
          false,
        );
      }
      await fs.unlink(this.writePath);
    }
    await syncDir(path.dirname(this.finalPath));
  }
}

/** Runs a file operation; a system error becomes a WriteError, permanent when retrying cannot help. */
async function guarded<T>(file: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (e) {
    if (e instanceof WriteError) throw e;
    const code = (e as NodeJS.ErrnoException).code ?? '';
    throw new WriteError(`local sink: cannot write ${file}: ${errorMessage(e)}`, !PERMANENT.has(code), { cause: e });
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.lstat(p);
    return true;
  } catch {
    return false;
  }
}

export default defineSink({
  key: 'local',
  summary: 'Write serialized batches to files in a local directory, appended or one file per input, with rolling parts.',
  accepts: 'payload',
  status: 'stable',
  delivery: {
    guarantee: 'at-least-once',
    why: "files are fsync'ed before the source acknowledges its input; a crash between the two writes the same records again.",
  },
  config,
  lint,
  async test(c) {
    // Writable: create the directory as a run would, then write and remove a hidden probe file.
    await fs.mkdir(c.path, { recursive: true });
    const probe = path.join(c.path, `.svc-test-${randomUUID()}`);
    await fs.writeFile(probe, '');
    await fs.unlink(probe);
  },
  examples: [
    {
      title: 'NDJSON rolled every 100,000 records or hour',
      yaml: 'type: local\npath: /data/out\nfilename_template: "{pipeline}_{timestamp}_{part}.ndjson"\nmax_records: 100000\nmax_time: 3600\n',
    },
    {
      title: 'One CSV per input file, mirroring the input tree, never replacing',
      yaml: 'type: local\npath: /data/export\nfilename_template: "{source_path}/{source_stem}.csv"\nfile_mode: single\noverwrite: false\n',
    },
    {
      title: 'One file per device, capped at 100 MiB',
      yaml: 'type: local\npath: /data/by-device\nfilename_template: "{field.device}/{pipeline}_{timestamp}.json"\nmax_bytes: 104857600\n',
    },
  ],
  dlqReader: localDlqReader,
  create: (c, ctx) =>
    new RollingFileSink(
      new LocalFiles(c.path),
      {
        template: c.filename_template,
        mode: c.file_mode,
        overwrite: c.overwrite,
        max_records: c.max_records,
        max_time: c.max_time,
        max_bytes: c.max_bytes,
        max_index: c.max_index,
      },
      ctx,
    ),
});
