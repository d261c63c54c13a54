// Sink `local`: writes encoded batches to files under a directory. `append` keeps one open file
// per expanded name for the run; `single` writes one file per source unit through a hidden
// temporary file renamed into place. Both roll to numbered parts on max_records/bytes/time.
import { randomBytes, randomUUID } from 'node:crypto';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { ConfigError, WriteError, errorMessage } from '../../errors.js';
import { expandTemplate, hasPartToken, lintTemplate, padPart, withPartSuffix } from '../common/filename-template.js';
import { defineSink, type Encoder, type LintIssue, type PluginContext, type Sink, type SinkBatch, type SinkRunInfo, type SourceMeta } from '../types.js';
import { syncDir } from '../../util/durable.js';

export const config = Type.Object({
  path: Type.String({ minLength: 1, description: 'Directory the files are written to; created if missing.' }),
  filename_template: Type.String({ minLength: 1, default: '{pipeline}_{timestamp}.bin', description: 'File name under path (may contain / for subdirectories); tokens such as {pipeline}, {timestamp}, {part}, {source_stem}, {field.<name>}.' }),
  file_mode: Type.Union([Type.Literal('append'), Type.Literal('single')], { default: 'append', description: 'append: one file per expanded name, appended to; single: one file per source unit, published atomically.' }),
  overwrite: Type.Boolean({ default: true, description: 'single mode: replace an existing file; false fails the write instead.' }),
  max_records: Type.Optional(Type.Integer({ minimum: 1, description: 'Start a new part before a file would hold more records than this.' })),
  max_time: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Start a new part at the first write after a file has been open this many seconds.' })),
  max_bytes: Type.Optional(Type.Integer({ minimum: 1, description: 'Start a new part before a file would grow past this many bytes (a single batch is never split).' })),
  max_index: Type.Integer({ minimum: 1, default: 99999, description: 'Highest part number; its digit count is the zero-padding width of {part}.' }),
}, { additionalProperties: false });

export type LocalSinkConfig = Static<typeof config>;

function lint(c: LocalSinkConfig): LintIssue[] {
  const issues = lintTemplate(c.filename_template).map((message) => ({ path: 'filename_template', message }));
  if (c.overwrite === false && c.file_mode !== 'single') {
    issues.push({ path: 'overwrite', message: 'overwrite applies to file_mode: single only; remove it or set file_mode: single' });
  }
  return issues;
}

/** Stands in for the part number while the name of a series of parts is computed. */
const PART_MARK = '\u0000';
/** Errors that retrying the same write cannot fix. */
const PERMANENT = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'EEXIST', 'ELOOP', 'EINVAL']);

interface OpenFile {
  /** Map key: source unit (single mode) + name with the part left open. */
  slot: string;
  unit: string;
  part: number;
  finalPath: string;
  /** Where bytes go: the final path (append) or a hidden temporary file beside it (single). */
  writePath: string;
  fh: FileHandle;
  /** Bytes in the file, including what earlier runs wrote. */
  size: number;
  /** Records this run wrote into it. */
  records: number;
  openedAt: number;
  /** Written since the last fsync. */
  dirty: boolean;
  dirSynced: boolean;
}

class LocalSink implements Sink {
  private readonly root: string;
  private readonly single: boolean;
  private readonly partToken: boolean;
  private readonly rolling: boolean;
  private readonly separator: Buffer;
  private readonly tail: Buffer;
  private run?: SinkRunInfo;
  private readonly files = new Map<string, OpenFile>();
  private readonly madeDirs = new Set<string>();
  /** Calls run one at a time: a file is never written by two calls at once. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly c: LocalSinkConfig, private readonly ctx: PluginContext & { encoder: Encoder }) {
    const problems = lintTemplate(c.filename_template);
    if (problems.length > 0) throw new ConfigError(`local sink: filename_template "${c.filename_template}": ${problems.join('; ')}`);
    this.root = path.resolve(c.path);
    this.single = c.file_mode === 'single';
    this.partToken = hasPartToken(c.filename_template);
    // A `whole` encoder (Parquet) makes a complete file per batch: every batch opens a new part.
    this.rolling = ctx.encoder.whole === true || c.max_records !== undefined || c.max_bytes !== undefined || c.max_time !== undefined;
    this.separator = Buffer.from(ctx.encoder.separator);
    this.tail = Buffer.from(ctx.encoder.tail);
  }

  open(run: SinkRunInfo): Promise<void> {
    return this.serial(async () => {
      await this.finishAll(); // a previous run that was never closed
      this.run = run;
    });
  }

  write(batch: SinkBatch): Promise<void> {
    return this.serial(() => this.writeBatch(batch));
  }

  /** Single mode: that unit's file is complete (published). Append files stay open. */
  endUnit(meta: SourceMeta): Promise<void> {
    return this.serial(async () => {
      if (!this.single) return;
      const unit = unitKey(meta);
      await this.finishEach([...this.files.values()].filter((f) => f.unit === unit));
    });
  }

  /** Everything written so far is on disk (fsync): the runtime may now finalize the inputs. */
  flush(): Promise<void> {
    return this.serial(async () => {
      for (const f of this.files.values()) if (f.dirty) await this.sync(f);
    });
  }

  close(): Promise<void> {
    return this.serial(async () => {
      await this.finishAll();
      this.run = undefined;
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async writeBatch(batch: SinkBatch): Promise<void> {
    if (batch.count === 0 && batch.payload.length === 0) return;
    const run = (this.run ??= { runId: randomUUID(), pipeline: this.ctx.pipeline, startedAt: new Date() });
    const unit = this.single ? unitKey(batch.meta) : '';
    let series: string;
    try {
      series = expandTemplate(this.c.filename_template, {
        pipeline: run.pipeline, runId: run.runId, startedAt: run.startedAt, part: PART_MARK,
        meta: batch.meta, first: batch.first ?? batch.records?.[0],
      });
    } catch (e) {
      throw new WriteError(`local sink: ${errorMessage(e)}`, false);
    }
    const slot = `${unit}\n${series}`;
    let f = this.files.get(slot) ?? (await this.openPart(slot, unit, series, 0));
    // Roll between batches, never inside one; an existing part that is already full is skipped too.
    while (f.size > 0 && this.isFull(f, batch)) {
      await this.finish(f);
      f = await this.openPart(slot, unit, series, f.part + 1);
    }
    const prefix = f.size === 0 ? Buffer.from(batch.head) : this.separator;
    await this.append(f, prefix.length > 0 ? Buffer.concat([prefix, batch.payload]) : batch.payload);
    f.records += batch.count;
  }

  private isFull(f: OpenFile, batch: SinkBatch): boolean {
    if (this.ctx.encoder.whole) return true; // a complete file is never appended to
    const { max_records, max_bytes, max_time } = this.c;
    if (max_records !== undefined && f.records + batch.count > max_records) return true;
    if (max_bytes !== undefined && f.size + this.separator.length + batch.payload.length + this.tail.length > max_bytes) return true;
    return max_time !== undefined && Date.now() - f.openedAt > max_time * 1000;
  }

  /** The relative file name of one part of a series. */
  private nameFor(series: string, part: number): string {
    const p = padPart(part, this.c.max_index);
    if (this.partToken) return series.split(PART_MARK).join(p);
    return this.rolling ? withPartSuffix(series, p) : series;
  }

  private async openPart(slot: string, unit: string, series: string, part: number): Promise<OpenFile> {
    if (part > this.c.max_index) {
      const last = path.join(this.root, this.nameFor(series, part - 1));
      throw new WriteError(`local sink: ${last} is full and the next part would exceed max_index ${this.c.max_index}; raise max_index or put {timestamp} in filename_template`, false);
    }
    const finalPath = path.join(this.root, this.nameFor(series, part));
    const dir = path.dirname(finalPath);
    let writePath = finalPath;
    try {
      if (!this.madeDirs.has(dir)) {
        await fs.mkdir(dir, { recursive: true });
        this.madeDirs.add(dir);
      }
      let fh: FileHandle;
      let size = 0;
      if (this.single) {
        if (!this.c.overwrite && (await exists(finalPath))) {
          throw new WriteError(`local sink: ${finalPath} already exists and overwrite is false`, false);
        }
        writePath = path.join(dir, `.${path.basename(finalPath)}.${randomBytes(6).toString('hex')}.tmp`);
        fh = await fs.open(writePath, 'ax+');
      } else {
        fh = await fs.open(finalPath, 'a+');
        size = await this.reopen(fh, finalPath).catch(async (e: unknown) => {
          await fh.close().catch(() => undefined);
          throw e;
        });
      }
      const f: OpenFile = { slot, unit, part, finalPath, writePath, fh, size, records: 0, openedAt: Date.now(), dirty: false, dirSynced: false };
      this.files.set(slot, f);
      return f;
    } catch (e) {
      throw toWriteError(e, writePath);
    }
  }

  /**
   * Prepares an existing file for appending and returns its size. A document closed by a tail
   * (a JSON array's `]`) is reopened by cutting that tail off, so the file stays one document.
   */
  private async reopen(fh: FileHandle, file: string): Promise<number> {
    const size = (await fh.stat()).size;
    if (size === 0 || this.tail.length === 0) return size;
    const end = Buffer.alloc(this.tail.length);
    const { bytesRead } = await fh.read(end, 0, end.length, Math.max(0, size - end.length));
    if (bytesRead === end.length && end.equals(this.tail)) {
      await fh.truncate(size - end.length);
      return size - end.length;
    }
    throw new WriteError(
      `local sink: cannot append to ${file}: it does not end with the serializer's closing ${typeof this.ctx.encoder.tail === 'string' ? JSON.stringify(this.ctx.encoder.tail) : `bytes ${Buffer.from(this.ctx.encoder.tail).toString('hex')}`} (written by another serializer, or an earlier run was interrupted); move it away or put {timestamp} in filename_template`,
      false,
    );
  }

  /** Appends all of `buf`; on failure cuts the file back so a retried batch is not doubled. */
  private async append(f: OpenFile, buf: Buffer): Promise<void> {
    try {
      for (let off = 0; off < buf.length;) off += (await f.fh.write(buf, off)).bytesWritten;
    } catch (e) {
      await f.fh.truncate(f.size).catch(() => undefined);
      throw toWriteError(e, f.writePath);
    }
    f.size += buf.length;
    f.dirty = true;
  }

  private async sync(f: OpenFile): Promise<void> {
    try {
      await f.fh.sync();
      f.dirty = false;
      if (!f.dirSynced) {
        await syncDir(path.dirname(f.writePath));
        f.dirSynced = true;
      }
    } catch (e) {
      throw toWriteError(e, f.writePath);
    }
  }

  /** Writes the tail, makes the file durable, closes it and (single mode) publishes it. */
  private async finish(f: OpenFile): Promise<void> {
    this.files.delete(f.slot);
    try {
      if (f.size > 0 && this.tail.length > 0) await this.append(f, this.tail);
      await this.sync(f);
    } finally {
      await f.fh.close().catch(() => undefined);
    }
    if (this.single) await this.publish(f);
  }

  private async publish(f: OpenFile): Promise<void> {
    try {
      if (f.size === 0) {
        await fs.unlink(f.writePath); // nothing was written: publish nothing
        return;
      }
      if (this.c.overwrite) {
        await fs.rename(f.writePath, f.finalPath);
      } else {
        // link refuses an existing name atomically, unlike rename.
        try {
          await fs.link(f.writePath, f.finalPath);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
          throw new WriteError(`local sink: ${f.finalPath} already exists and overwrite is false; the output was kept in ${f.writePath}`, false);
        }
        await fs.unlink(f.writePath);
      }
      await syncDir(path.dirname(f.finalPath));
    } catch (e) {
      throw toWriteError(e, f.finalPath);
    }
  }

  private finishAll(): Promise<void> {
    return this.finishEach([...this.files.values()]);
  }

  /** Finishes every file even when one fails, then reports the first failure. */
  private async finishEach(files: OpenFile[]): Promise<void> {
    let first: unknown;
    for (const f of files) {
      try {
        await this.finish(f);
      } catch (e) {
        first ??= e;
      }
    }
    if (first !== undefined) throw first;
  }
}

/** Identifies a source unit across write and endUnit. */
const unitKey = (meta: SourceMeta): string => String(meta.source_path ?? meta.source_filename ?? '');

function toWriteError(e: unknown, file: string): WriteError {
  if (e instanceof WriteError) return e;
  const code = (e as NodeJS.ErrnoException).code ?? '';
  return new WriteError(`local sink: cannot write ${file}: ${errorMessage(e)}`, !PERMANENT.has(code), { cause: e });
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
  delivery: { guarantee: 'at-least-once', why: 'files are fsync\'ed before the source acknowledges its input; a crash between the two writes the same records again.' },
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
  create: (c, ctx) => new LocalSink(c, ctx),
});
