// Holds a unit's byte stream so that it can be read at any offset (Parquet's footer is at the end):
// in memory while it is small, else in a temporary file under os.tmpdir() that close() removes.
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Spool {
  size: number;
  /** Where the bytes are (for messages and tests). */
  kind: 'memory' | 'file';
  read(position: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** Spools `stream`; bytes beyond `memoryLimit` go to a temporary file. Cleans up after itself on error. */
export async function spool(stream: AsyncIterable<Buffer>, memoryLimit: number): Promise<Spool> {
  const parts: Buffer[] = [];
  let size = 0;
  let dir: string | undefined;
  let fh: FileHandle | undefined;
  const cleanup = async () => {
    await fh?.close().catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  };
  try {
    for await (const b of stream) {
      if (!fh && size + b.length > memoryLimit) {
        dir = await mkdtemp(join(tmpdir(), 'svc-parquet-'));
        fh = await open(join(dir, 'unit.parquet'), 'w+');
        for (const p of parts) await writeAll(fh, p);
        parts.length = 0;
      }
      if (fh) await writeAll(fh, b);
      else parts.push(b);
      size += b.length;
    }
  } catch (e) {
    await cleanup();
    throw e;
  }
  if (!fh) {
    const all = Buffer.concat(parts, size);
    return { size, kind: 'memory', read: async (pos, len) => all.subarray(pos, pos + len), close: async () => undefined };
  }
  const file = fh;
  return {
    size,
    kind: 'file',
    async read(pos, len) {
      // Its own buffer: a piece may cross to a worker thread and be kept there.
      const buf = Buffer.allocUnsafeSlow(Math.max(0, Math.min(len, size - pos)));
      for (let off = 0; off < buf.length; ) {
        const { bytesRead } = await file.read(buf, off, buf.length - off, pos + off);
        if (bytesRead === 0) throw new Error(`temporary spool file ended early at byte ${pos + off}`);
        off += bytesRead;
      }
      return buf;
    },
    close: cleanup,
  };
}

async function writeAll(fh: FileHandle, b: Buffer): Promise<void> {
  for (let off = 0; off < b.length; ) off += (await fh.write(b, off, b.length - off)).bytesWritten;
}
