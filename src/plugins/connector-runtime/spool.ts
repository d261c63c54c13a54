// An append-only, crash-safe spool: what a push source acknowledges is on disk first, so a crash
// (kill -9, power loss) never loses it. One spool is one directory:
//
//   <base>.seg   segments of records `[u32 length][u32 crc32 of length+bytes][bytes]` (little endian);
//                <base> (16 digits) is the spool-wide byte offset of the segment's first byte, so a
//                record's Position (the offset just past its end) grows across segments.
//   committed    the Position up to which every record was delivered (decimal text); replaced by
//                temp file + rename, so it is always whole.
//
// Appends use group commit: appends that arrive while a write + fdatasync is in progress are
// written together by the next one (one writev, one fdatasync), so a burst of N appends costs a
// few fsyncs, not N. Each process starts a fresh segment; the segments of the previous process
// are only read (replay) and deleted once committed past. A torn record at a segment's end (the
// crash hit a write that was never acknowledged) is ignored and logged.
import { mkdir, open, readdir, readFile, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import * as zlib from 'node:zlib';
import { errorMessage } from '../../core/errors.js';
import { silentLogger, type Logger } from '../../observability/log.js';
// A new directory entry (segment, renamed `committed`) is durable only once its directory is synced.
import { syncDir } from '../../util/durable.js';

/** Spool-wide offset just past a record: everything up to a Position can be committed at once. */
export type Position = number;

export interface SpoolOptions {
  log?: Logger;
  /** A segment is closed and a new one started once it reaches this size (default 64 MiB). */
  segmentBytes?: number;
  /**
   * The `committed` file is rewritten at most this often (default 100 ms): commits in between only
   * move the mark in memory. A crash then replays at most that much already-delivered input again
   * (at-least-once), in exchange for one small fsync per interval instead of one per commit.
   */
  commitIntervalMs?: number;
}

const HEADER = 8;
const SEGMENT = /^(\d{16})\.seg$/;
const segmentName = (base: number) => `${String(base).padStart(16, '0')}.seg`;

// node:zlib has crc32 from Node 20.15; the table version serves older 20.x releases.
let table: Uint32Array | undefined;
function tableCrc32(data: Uint8Array, value = 0): number {
  table ??= Uint32Array.from({ length: 256 }, (_, n) => {
    for (let k = 0; k < 8; k++) n = n & 1 ? 0xedb88320 ^ (n >>> 1) : n >>> 1;
    return n >>> 0;
  });
  let c = ~value;
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
const crc32: (data: Uint8Array, value?: number) => number = typeof zlib.crc32 === 'function' ? zlib.crc32 : tableCrc32;

/** The checksum covers the length too: a zero-filled tail (a size extended, data never written) fails it. */
const checksum = (lengthBytes: Uint8Array, body: Uint8Array) => crc32(body, crc32(lengthBytes));

interface Segment {
  base: number;
  /** Offset just past the segment's last byte (the next segment's base). */
  end: number;
}

interface Waiting {
  body: Buffer;
  resolve(p: Position): void;
  reject(e: Error): void;
}

/** Spool directories open in this process: two writers on one spool would corrupt it. */
const openDirs = new Set<string>();

export class Spool {
  private readonly log: Logger;
  private readonly segmentBytes: number;
  private readonly commitIntervalMs: number;
  /** Segments of earlier processes and closed ones of this process, oldest first. */
  private readonly closedSegments: Segment[];
  /** The segments earlier processes left: what replay() reads. */
  private readonly previous: readonly Segment[];
  /** The segment appends go to; opened on the first write. */
  private active?: { base: number; size: number; fh: FileHandle };
  /** Base of the next segment to open. */
  private nextBase: number;
  private waiting: Waiting[] = [];
  private flushing?: Promise<void>;
  /** Commit mark in memory, and the one the `committed` file holds. */
  private committed: number;
  private durable: number;
  private commitTimer?: NodeJS.Timeout;
  private commitWrite?: Promise<void>;
  private closed = false;

  private constructor(
    readonly dir: string,
    committed: number,
    segments: Segment[],
    nextBase: number,
    opts: SpoolOptions,
  ) {
    this.log = opts.log ?? silentLogger;
    this.segmentBytes = opts.segmentBytes ?? 64 << 20;
    this.commitIntervalMs = opts.commitIntervalMs ?? 100;
    this.committed = this.durable = committed;
    this.closedSegments = segments;
    this.previous = [...segments];
    this.nextBase = nextBase;
  }

  /** Opens (creating) the spool in `dir`; throws when this process has it open already. */
  static async open(dir: string, opts: SpoolOptions = {}): Promise<Spool> {
    const key = resolve(dir);
    if (openDirs.has(key)) throw new Error(`spool ${dir} is already open`);
    openDirs.add(key);
    try {
      // New directories are durable once their parents are synced (power loss, not only kill -9).
      const created = await mkdir(dir, { recursive: true });
      if (created) {
        for (let d = resolve(dir); ; d = dirname(d)) {
          await syncDir(dirname(d));
          if (d === resolve(created)) break;
        }
      }
      const log = opts.log ?? silentLogger;
      let committed = 0;
      try {
        const text = await readFile(join(dir, 'committed'), 'utf8');
        if (!/^\d+\n$/.test(text)) throw new Error(`unexpected content ${JSON.stringify(text.slice(0, 40))}`);
        committed = Number(text);
      } catch (e) {
        // Without a readable mark everything is replayed: duplicates, never a loss.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
          log.warn({ spool: dir, err: errorMessage(e) }, 'spool: committed mark unreadable; replaying every record');
      }
      const bases = (await readdir(dir))
        .map((f) => SEGMENT.exec(f)?.[1])
        .filter((b): b is string => b !== undefined)
        .map(Number)
        .sort((a, b) => a - b);
      const segments: Segment[] = [];
      let lastEnd = 0;
      for (let i = 0; i < bases.length; i++) {
        const base = bases[i]!;
        const end = bases[i + 1] ?? base + (await stat(join(dir, segmentName(base)))).size;
        lastEnd = end;
        // Wholly committed (delivered before the crash) or empty: nothing to replay.
        if (end <= committed || end === base) await unlink(join(dir, segmentName(base)));
        else segments.push({ base, end });
      }
      // This process writes a new segment past everything that exists (a torn tail included).
      const nextBase = Math.max(committed, lastEnd);
      return new Spool(dir, committed, segments, nextBase, opts);
    } catch (e) {
      openDirs.delete(key);
      throw e;
    }
  }

  /** Resolves with the record's Position once it is on disk (written and fdatasync'ed). */
  append(body: Buffer): Promise<Position> {
    if (this.closed) return Promise.reject(new Error('the spool is closed'));
    return new Promise<Position>((resolve, reject) => {
      this.waiting.push({ body, resolve, reject });
      this.flushing ??= this.flushLoop();
    });
  }

  private async flushLoop() {
    // Let the appends of this turn of the event loop (e.g. pipelined requests parsed together)
    // join the first write.
    await new Promise((r) => setImmediate(r));
    while (this.waiting.length) {
      const group = this.waiting;
      this.waiting = [];
      await this.writeGroup(group);
    }
    this.flushing = undefined;
  }

  private async writeGroup(group: Waiting[]) {
    const headers = Buffer.allocUnsafe(HEADER * group.length);
    const parts: Buffer[] = [];
    let bytes = 0;
    for (let i = 0; i < group.length; i++) {
      const body = group[i]!.body;
      const h = headers.subarray(i * HEADER, (i + 1) * HEADER);
      h.writeUInt32LE(body.length, 0);
      h.writeUInt32LE(checksum(h.subarray(0, 4), body), 4);
      parts.push(h, body);
      bytes += HEADER + body.length;
    }
    let seg: { base: number; size: number; fh: FileHandle } | undefined;
    try {
      seg = await this.segment();
      const { bytesWritten } = await seg.fh.writev(parts);
      if (bytesWritten !== bytes) throw new Error(`short write: ${bytesWritten} of ${bytes} bytes`);
      await seg.fh.datasync();
    } catch (e) {
      // The sender sees the error code only (no file names); the log has the whole message.
      const err = new Error(`spool write failed (${(e as NodeJS.ErrnoException).code ?? 'I/O error'})`);
      this.log.error({ spool: this.dir, records: group.length, err: errorMessage(e) }, 'spool: write failed; the senders are told to retry');
      // What reached the file is unknown: never append behind it. The next write opens a new
      // segment past it; on reopen this one ends in a torn record, which replay ignores.
      if (seg) await this.retire(seg, seg.size + bytes);
      for (const w of group) w.reject(err);
      return;
    }
    let at = seg.base + seg.size;
    seg.size += bytes;
    for (const w of group) {
      at += HEADER + w.body.length;
      w.resolve(at);
    }
    if (seg.size >= this.segmentBytes) await this.retire(seg, seg.size);
  }

  private async segment() {
    if (this.active) return this.active;
    const base = this.nextBase;
    // Nothing of value can carry this name (it lies past every record written), so 'w' is safe and
    // lets a retry reuse the name after a failed directory sync.
    const fh = await open(join(this.dir, segmentName(base)), 'w');
    try {
      await syncDir(this.dir);
    } catch (e) {
      await fh.close().catch(() => {});
      throw e;
    }
    this.active = { base, size: 0, fh };
    return this.active;
  }

  /** Closes a segment for writing; the next write starts a new one at `base + size`. */
  private async retire(seg: { base: number; fh: FileHandle }, size: number) {
    if (this.active === seg) this.active = undefined;
    this.nextBase = seg.base + size;
    this.closedSegments.push({ base: seg.base, end: seg.base + size });
    await seg.fh.close().catch(() => {});
  }

  /**
   * The records that were not committed when the spool was opened (a previous process appended
   * them), oldest first. Read only what an earlier process wrote: call it once, before relying on
   * commits of new appends.
   */
  async *replay(): AsyncGenerator<{ body: Buffer; position: Position }> {
    for (const seg of this.previous) {
      const file = join(this.dir, segmentName(seg.base));
      let data: Buffer;
      try {
        data = await readFile(file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // committed and deleted meanwhile
        throw e;
      }
      let off = 0;
      while (off < data.length) {
        const len = off + HEADER <= data.length ? data.readUInt32LE(off) : -1;
        const end = off + HEADER + len;
        if (len < 0 || end > data.length || checksum(data.subarray(off, off + 4), data.subarray(off + HEADER, end)) !== data.readUInt32LE(off + 4)) {
          // Only a write that was never acknowledged can be torn: skip it (and what follows it in this file).
          this.log.warn(
            { spool: this.dir, segment: file, offset: off, bytes: data.length - off },
            'spool: torn record at the end of a segment ignored (its write was never acknowledged)',
          );
          break;
        }
        const position = seg.base + end;
        if (position > this.committed) yield { body: data.subarray(off + HEADER, end), position };
        off = end;
      }
    }
  }

  /**
   * Everything up to `position` was delivered: it will not be replayed. The mark reaches the disk
   * within commitIntervalMs (and on close); segments wholly below it are then deleted.
   */
  commit(position: Position) {
    if (position <= this.committed) return;
    this.committed = position;
    this.scheduleCommit();
  }

  private scheduleCommit() {
    if (this.commitTimer || this.commitWrite || this.closed || this.durable >= this.committed) return;
    this.commitTimer = setTimeout(() => void this.persistCommit(), this.commitIntervalMs);
  }

  /** Writes the commit mark now unless a write is under way; never rejects. */
  private persistCommit(): Promise<void> {
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    if (!this.commitWrite && this.durable < this.committed) {
      this.commitWrite = this.writeCommitted().finally(() => {
        this.commitWrite = undefined;
        this.scheduleCommit(); // commits that arrived during the write
      });
    }
    return this.commitWrite ?? Promise.resolve();
  }

  /** Temp file, fsync, rename, directory fsync: the mark on disk is always a whole old or new one. */
  private async writeCommitted() {
    try {
      const mark = this.committed;
      const tmp = join(this.dir, 'committed.tmp');
      const fh = await open(tmp, 'w');
      try {
        await fh.writeFile(`${mark}\n`);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, join(this.dir, 'committed'));
      await syncDir(this.dir);
      this.durable = mark;
      await this.dropCommitted();
    } catch (e) {
      // Harmless for the data: a stale mark only means more is replayed after a crash.
      this.log.warn({ spool: this.dir, err: errorMessage(e) }, 'spool: could not record the committed position');
    }
  }

  private async dropCommitted() {
    while (this.closedSegments.length && this.closedSegments[0]!.end <= this.durable) {
      const seg = this.closedSegments.shift()!;
      await unlink(join(this.dir, segmentName(seg.base))).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') this.log.warn({ spool: this.dir, err: errorMessage(e) }, 'spool: could not delete a committed segment');
      });
    }
  }

  /** Finishes pending appends, writes the commit mark, closes the segment. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    await this.flushing;
    await this.commitWrite;
    await this.persistCommit();
    clearTimeout(this.commitTimer);
    if (this.active) await this.active.fh.close().catch(() => {});
    this.active = undefined;
    openDirs.delete(resolve(this.dir));
  }
}
