// What every file and object sink shares (local, sftp, ftp, s3, gcs, azure_blob): names from the
// filename/key template, one output per expanded name, rolling to numbered parts on max_records /
// max_bytes / max_time up to max_index, the serializer's head, separator and tail so that a file
// built from many batches is one document, and publishing only complete files. A sink supplies a
// `FileTarget` that opens, writes and publishes on its peer; this module decides what goes where.
import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { ConfigError, WriteError, errorMessage } from '../../core/errors.js';
import { expandTemplate, hasPartToken, lintTemplate, padPart, withPartSuffix } from './filename-template.js';
import type { Encoder, LintIssue, PluginContext, Sink, SinkBatch, SinkRunInfo, SourceMeta } from '../types.js';

/** One output at the target, open for writing. */
export interface OutFile {
  /** Bytes already in it (an appended file), else 0. */
  size: number;
  /** Appends all of `buf`. */
  write(buf: Buffer): Promise<void>;
  /** The last `n` bytes (append targets: to find a serializer's tail when reopening). */
  readEnd?(n: number): Promise<Buffer>;
  /** Cuts the file to `size` bytes (append targets: a reopened tail, a failed append). */
  truncate?(size: number): Promise<void>;
  /** Makes what was written so far durable; the file stays open (append files). */
  sync?(): Promise<void>;
  /** Closes it; a new file is then published under its final name (an empty one is discarded). */
  finish(): Promise<void>;
  /** Closes it without publishing (a temporary is removed, an upload cancelled). */
  abort(): Promise<void>;
}

export interface FileTarget {
  /** `<type> sink`, for messages. */
  label: string;
  /** The full name of a relative path at the target, for messages. */
  where(rel: string): string;
  /** Opens `rel` for appending, creating what is missing (file_mode append). */
  openAppend?(rel: string): Promise<OutFile>;
  /**
   * Opens a new file that readers see under `rel` only once finish() published it whole (a temporary
   * renamed into place, or an object upload completed). `overwrite` false: never replace an existing one.
   */
  openNew(rel: string, overwrite: boolean): Promise<OutFile>;
  /** Closes the target's connection at the end of the run, after every output was finished. */
  end?(): Promise<void> | void;
}

/**
 * When an output is complete: `append` keeps one file per name open for the run and appends to
 * what is there; `single` publishes one file per source unit; `flush` publishes every open output
 * whenever the runtime flushes (object stores, which cannot append), and a name written again
 * later in the run takes the next part number.
 */
export type FileMode = 'append' | 'single' | 'flush';

export interface RollingConfig {
  /** The template field's own name, for messages (filename_template, key_template...). */
  templateField?: string;
  template: string;
  mode: FileMode;
  overwrite?: boolean;
  max_records?: number;
  max_time?: number;
  max_bytes?: number;
  max_index?: number;
}

/** Doc 3's rolling fields of file sinks (local, sftp). */
export const rollingFields = {
  max_records: Type.Optional(Type.Integer({ minimum: 1, description: 'Start a new part before a file would hold more records than this.' })),
  max_time: Type.Optional(
    Type.Number({ exclusiveMinimum: 0, description: 'Start a new part at the first write after a file has been open this many seconds.' }),
  ),
  max_bytes: Type.Optional(
    Type.Integer({ minimum: 1, description: 'Start a new part before a file would grow past this many bytes (a single batch is never split).' }),
  ),
  max_index: Type.Integer({ minimum: 1, default: 99999, description: 'Highest part number; its digit count is the zero-padding width of {part}.' }),
};

export const fileModeField = Type.Union([Type.Literal('append'), Type.Literal('single')], {
  default: 'append',
  description: 'append: one file per expanded name, appended to; single: one file per source unit, published atomically.',
});

/**
 * The name template and content type of an object sink (s3 key_template, gcs and azure_blob
 * blob_template): `noun` is what the store calls an object ("object", "blob").
 */
export const objectSinkFields = (noun: string) => ({
  template: Type.String({
    minLength: 1,
    default: '{pipeline}/{timestamp}',
    description: `${noun[0]!.toUpperCase()}${noun.slice(1)} name: tokens {pipeline}, {timestamp} (run start), {epoch}, {part}, {run_id}, {source_filename}, {source_stem}, {source_path}, {field.<name>}... A name written again later in the same run gets _<part> (or fills {part}).`,
  }),
  content_type: Type.String({
    minLength: 1,
    default: 'application/octet-stream',
    description: `Content-Type stored with each ${noun}; match it to serializer_out (application/json, application/x-ndjson, text/csv...).`,
  }),
});

/** The template's problems as lint issues at `field`. */
export const lintTemplateField = (template: string, field: string): LintIssue[] => lintTemplate(template).map((message) => ({ path: field, message }));

/** Stands in for the part number while the name of a series of parts is computed. */
const PART_MARK = '\u0000';

interface Open {
  /** Map key: source unit (single mode) + name with the part left open. */
  slot: string;
  unit: string;
  part: number;
  rel: string;
  out: OutFile;
  /** Bytes in the file, including what earlier runs wrote. */
  size: number;
  /** Records this run wrote into it. */
  records: number;
  openedAt: number;
  /** Written since the last sync. */
  dirty: boolean;
  /** `size` at the last sync (or at open): what a crash or a lost connection cannot take back. */
  synced: number;
}

/**
 * A Sink over a FileTarget. Calls run one at a time, so an output is never written by two calls at
 * once; a failed append is cut back (where the target can) so a retried batch is not doubled.
 */
export class RollingFileSink implements Sink {
  private readonly partToken: boolean;
  private readonly rolling: boolean;
  private readonly separator: Buffer;
  private readonly tail: Buffer;
  private readonly maxIndex: number;
  private run?: SinkRunInfo;
  private readonly files = new Map<string, Open>();
  /** flush mode: the next part of each series already published this run. */
  private readonly nextPart = new Map<string, number>();
  private queue: Promise<unknown> = Promise.resolve();
  /**
   * An output that could not be cut back after a failed write was given up with the batches already
   * in it; the next flush fails, so the runtime keeps the inputs of those batches for another run.
   */
  private lost?: string;
  /**
   * Append mode: outputs given up that way, by name, with their synced size. In append mode the tail
   * is written only when a file is finished, so such a file ends in the middle of its document; it is
   * cut back to what was synced when the run writes to it again, or when the sink closes.
   */
  private readonly givenUp = new Map<string, number>();

  constructor(
    private readonly target: FileTarget,
    private readonly c: RollingConfig,
    private readonly ctx: Pick<PluginContext, 'pipeline'> & { encoder: Encoder },
  ) {
    const problems = lintTemplate(c.template);
    if (problems.length > 0) throw new ConfigError(`${target.label}: ${c.templateField ?? 'filename_template'} "${c.template}": ${problems.join('; ')}`);
    this.partToken = hasPartToken(c.template);
    // A `whole` encoder (Parquet) makes a complete file per batch: every batch opens a new part.
    this.rolling = ctx.encoder.whole === true || c.max_records !== undefined || c.max_bytes !== undefined || c.max_time !== undefined;
    this.separator = Buffer.from(ctx.encoder.separator);
    this.tail = Buffer.from(ctx.encoder.tail);
    this.maxIndex = c.max_index ?? 99999;
  }

  open(run: SinkRunInfo): Promise<void> {
    return this.serial(async () => {
      await this.finishAll(); // a previous run that was never closed
      this.nextPart.clear();
      this.run = run;
    });
  }

  write(batch: SinkBatch): Promise<void> {
    return this.serial(() => this.writeBatch(batch));
  }

  /** Single mode: that unit's file is complete (published). */
  endUnit(meta: SourceMeta): Promise<void> {
    return this.serial(async () => {
      if (this.c.mode !== 'single') return;
      const unit = unitKey(meta);
      await this.finishEach([...this.files.values()].filter((f) => f.unit === unit));
    });
  }

  /** Everything written so far is durable: synced (append) or published (flush). */
  flush(): Promise<void> {
    return this.serial(async () => {
      if (this.c.mode === 'flush') await this.finishAll();
      else for (const f of this.files.values()) if (f.dirty) await this.sync(f);
      const lost = this.lost;
      this.lost = undefined;
      if (lost) throw new WriteError(`${this.target.label}: ${lost}; the records written into it since the last flush are kept for another run`, true);
    });
  }

  close(): Promise<void> {
    return this.serial(async () => {
      try {
        await this.finishAll();
        await this.repairGivenUp();
      } finally {
        this.run = undefined;
        await this.target.end?.();
      }
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
    const unit = this.c.mode === 'single' ? unitKey(batch.meta) : '';
    let series: string;
    try {
      series = expandTemplate(this.c.template, {
        pipeline: run.pipeline,
        runId: run.runId,
        startedAt: run.startedAt,
        part: PART_MARK,
        meta: batch.meta,
        first: batch.first ?? batch.records?.[0],
      });
    } catch (e) {
      throw new WriteError(`${this.target.label}: ${errorMessage(e)}`, false);
    }
    const slot = `${unit}\n${series}`;
    let f = this.files.get(slot) ?? (await this.openPart(slot, unit, series, this.nextPart.get(slot) ?? 0));
    // Roll between batches, never inside one; an existing part that is already full is skipped too.
    while (f.size > 0 && this.isFull(f, batch)) {
      await this.finish(f);
      f = await this.openPart(slot, unit, series, f.part + 1);
    }
    const prefix = f.size === 0 ? Buffer.from(batch.head) : this.separator;
    await this.append(f, prefix.length > 0 ? Buffer.concat([prefix, batch.payload]) : batch.payload);
    f.records += batch.count;
  }

  private isFull(f: Open, batch: SinkBatch): boolean {
    if (this.ctx.encoder.whole) return true; // a complete file is never appended to
    const { max_records, max_bytes, max_time } = this.c;
    if (max_records !== undefined && f.records + batch.count > max_records) return true;
    if (max_bytes !== undefined && f.size + this.separator.length + batch.payload.length + this.tail.length > max_bytes) return true;
    return max_time !== undefined && Date.now() - f.openedAt > max_time * 1000;
  }

  /** The relative name of one part of a series: part 0 is the plain name unless the sink rolls. */
  private nameFor(series: string, part: number): string {
    const p = padPart(part, this.maxIndex);
    if (this.partToken) return series.split(PART_MARK).join(p);
    return this.rolling || part > 0 ? withPartSuffix(series, p) : series;
  }

  private async openPart(slot: string, unit: string, series: string, part: number): Promise<Open> {
    if (part > this.maxIndex) {
      const last = this.target.where(this.nameFor(series, part - 1));
      throw new WriteError(
        `${this.target.label}: ${last} is full and the next part would exceed max_index ${this.maxIndex}; raise max_index or put {timestamp} in the template`,
        false,
      );
    }
    const rel = this.nameFor(series, part);
    let out: OutFile;
    let size = 0;
    try {
      if (this.c.mode === 'append') {
        out = await this.target.openAppend!(rel);
        size = await this.reopen(out, rel).catch(async (e: unknown) => {
          await out.abort().catch(() => undefined);
          throw e;
        });
      } else {
        out = await this.target.openNew(rel, this.c.overwrite ?? true);
      }
    } catch (e) {
      throw this.writeError(e, rel);
    }
    const f: Open = { slot, unit, part, rel, out, size, records: 0, openedAt: Date.now(), dirty: false, synced: size };
    this.files.set(slot, f);
    return f;
  }

  /**
   * Prepares an existing file for appending and returns its size. A document closed by a tail
   * (a JSON array's `]`) is reopened by cutting that tail off, so the file stays one document.
   */
  private async reopen(out: OutFile, rel: string): Promise<number> {
    const synced = await this.cutBack(out, rel);
    if (synced !== undefined) {
      this.givenUp.delete(rel);
      return synced;
    }
    const size = out.size;
    if (size === 0 || this.tail.length === 0) return size;
    const end = out.readEnd && size >= this.tail.length ? await out.readEnd(this.tail.length) : undefined;
    if (end && end.equals(this.tail) && out.truncate) {
      await out.truncate(size - end.length);
      return size - end.length;
    }
    const tail = typeof this.ctx.encoder.tail === 'string' ? JSON.stringify(this.ctx.encoder.tail) : `bytes ${this.tail.toString('hex')}`;
    throw new WriteError(
      `${this.target.label}: cannot append to ${this.target.where(rel)}: it does not end with the serializer's closing ${tail} (written by another serializer, or an earlier run was interrupted)${out.truncate ? '' : ', or this target cannot cut it off'}; move it away or put {timestamp} in the template`,
      false,
    );
  }

  /** Appends all of `buf`; on failure cuts the file back (where possible) so a retried batch is not doubled. */
  private async append(f: Open, buf: Buffer): Promise<void> {
    try {
      await f.out.write(buf);
    } catch (e) {
      const cut = f.out.truncate
        ? await f.out.truncate(f.size).then(
            () => true,
            () => false,
          )
        : false;
      if (!cut) {
        // Nothing cut back: appending after what the failed write left would double it. This output
        // is given up, the retry writes a fresh one, and the next flush fails for the batches that
        // were in it.
        this.files.delete(f.slot);
        if (f.records > 0) this.lost ??= `${this.target.where(f.rel)} failed after ${f.records} records: ${errorMessage(e)}`;
        if (this.c.mode === 'append') this.givenUp.set(f.rel, f.synced);
        await f.out.abort().catch(() => undefined);
      }
      throw this.writeError(e, f.rel);
    }
    f.size += buf.length;
    f.dirty = true;
  }

  private async sync(f: Open): Promise<void> {
    try {
      await f.out.sync?.();
      f.dirty = false;
      f.synced = f.size;
    } catch (e) {
      throw this.writeError(e, f.rel);
    }
  }

  /** Writes the tail, closes the output and publishes it. */
  private async finish(f: Open): Promise<void> {
    this.files.delete(f.slot);
    if (this.c.mode === 'flush') this.nextPart.set(f.slot, f.part + 1);
    try {
      if (f.size > 0 && this.tail.length > 0) await this.append(f, this.tail);
      await f.out.finish();
    } catch (e) {
      await f.out.abort().catch(() => undefined);
      throw this.writeError(e, f.rel);
    }
  }

  /**
   * Given-up outputs the run did not write to again: cut back to what was synced and closed with the
   * tail. Best effort: a peer still out of reach leaves the file as it is, and a later run that
   * appends to it is told so (reopen()).
   */
  private async repairGivenUp(): Promise<void> {
    for (const rel of [...this.givenUp.keys()]) {
      const out = await this.target.openAppend!(rel).catch(() => undefined);
      if (!out) continue;
      try {
        const synced = await this.cutBack(out, rel);
        if (synced === undefined) throw new Error('cannot be cut back');
        if (synced > 0 && this.tail.length > 0) await out.write(this.tail);
        await out.finish();
        this.givenUp.delete(rel);
      } catch {
        await out.abort().catch(() => undefined);
      }
    }
  }

  /**
   * A given-up output (this.givenUp) cut back to its synced size, which is returned; the batches
   * after that sync are kept for another run (this.lost). Undefined when `rel` was not given up, or
   * the target cannot cut it or holds less than was synced.
   */
  private async cutBack(out: OutFile, rel: string): Promise<number | undefined> {
    const synced = this.givenUp.get(rel);
    if (synced === undefined || !out.truncate || out.size < synced) return undefined;
    await out.truncate(synced);
    return synced;
  }

  private finishAll(): Promise<void> {
    return this.finishEach([...this.files.values()]);
  }

  /** Finishes every output even when one fails, then reports the first failure. */
  private async finishEach(files: Open[]): Promise<void> {
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

  private writeError(e: unknown, rel: string): WriteError {
    if (e instanceof WriteError) return e;
    return new WriteError(`${this.target.label}: cannot write ${this.target.where(rel)}: ${errorMessage(e)}`, true, { cause: e });
  }
}

/** Identifies a source unit across write and endUnit. */
const unitKey = (meta: SourceMeta): string => String(meta.source_path ?? meta.source_filename ?? '');
