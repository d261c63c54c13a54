// The shared file and object writer over an in-memory target that can fail: flush-mode publishing
// and part numbering, and what happens to an output whose failed write cannot be cut back.
import { describe, expect, it } from 'vitest';
import { WriteError } from '../../../src/core/errors.js';
import { encoderFor } from '../../../src/engine/plan.js';
import { RollingFileSink, type FileTarget, type OutFile } from '../../../src/plugins/connector-runtime/file-sink.js';
import { registry } from '../../../src/plugins/registry.js';
import type { Rec, SinkBatch } from '../../../src/plugins/types.js';

const encoder = encoderFor(registry, { type: 'json' });
const batch = (records: Rec[]): SinkBatch => ({
  payload: Buffer.from(encoder.body(records)),
  head: encoder.head(records),
  count: records.length,
  records,
  meta: { source_filename: 'in.ndjson' },
});

/** Objects published whole at finish(); `failNext` makes the next write fail; `truncate` as the target can. */
class MemoryTarget implements FileTarget {
  readonly label = 'memory sink';
  readonly published = new Map<string, string>();
  failNext = false;
  aborted = 0;
  ended = false;

  constructor(private readonly truncate?: 'works' | 'fails') {}

  where(rel: string) {
    return `mem://${rel}`;
  }

  async openNew(rel: string): Promise<OutFile> {
    const chunks: Buffer[] = [];
    const out: OutFile = {
      size: 0,
      write: async (buf) => {
        if (this.failNext) {
          this.failNext = false;
          chunks.push(buf.subarray(0, 3)); // part of it went out before the failure
          throw new Error('connection reset');
        }
        chunks.push(buf);
      },
      finish: async () => void this.published.set(rel, Buffer.concat(chunks).toString()),
      abort: async () => void this.aborted++,
    };
    if (this.truncate) {
      out.truncate = async (size) => {
        if (this.truncate === 'fails') throw new Error('cannot truncate');
        const all = Buffer.concat(chunks).subarray(0, size);
        chunks.length = 0;
        chunks.push(all);
      };
    }
    return out;
  }

  end() {
    this.ended = true;
  }
}

/**
 * Append mode over files kept in memory, as a remote server keeps them: while `down`, a write sends
 * part of its bytes and fails, and nothing can be cut back (the connection is gone).
 */
class AppendTarget implements FileTarget {
  readonly label = 'remote sink';
  readonly files = new Map<string, Buffer>();
  down = false;

  where(rel: string) {
    return `remote://${rel}`;
  }

  async openNew(): Promise<OutFile> {
    throw new Error('append mode only');
  }

  async openAppend(rel: string): Promise<OutFile> {
    if (this.down) throw new Error('connection refused');
    const file = () => this.files.get(rel) ?? Buffer.alloc(0);
    const out: OutFile = {
      size: file().length,
      write: async (buf) => {
        if (this.down) {
          this.files.set(rel, Buffer.concat([file(), buf.subarray(0, 3)]));
          throw new Error('connection reset');
        }
        this.files.set(rel, Buffer.concat([file(), buf]));
      },
      readEnd: async (n) => file().subarray(Math.max(0, file().length - n)),
      truncate: async (size) => {
        if (this.down) throw new Error('connection reset');
        this.files.set(rel, file().subarray(0, size));
      },
      sync: async () => {},
      finish: async () => {},
      abort: async () => {},
    };
    return out;
  }
}

const appendSink = (target: AppendTarget) => new RollingFileSink(target, { template: 'out.json', mode: 'append' }, { pipeline: 'p', encoder });

const sinkOver = (target: MemoryTarget) => new RollingFileSink(target, { template: 'out.json', mode: 'flush' }, { pipeline: 'p', encoder });

describe('RollingFileSink', () => {
  it('flush mode: every flush publishes whole documents; a name written again gets the next part; close ends the target', async () => {
    const target = new MemoryTarget();
    const sink = sinkOver(target);
    await sink.open({ runId: 'r', pipeline: 'p', startedAt: new Date() });
    await sink.write(batch([{ a: 1 }]));
    await sink.write(batch([{ a: 2 }]));
    expect(target.published.size).toBe(0); // nothing visible before the flush
    await sink.flush();
    await sink.write(batch([{ a: 3 }]));
    await sink.close();
    expect([...target.published.keys()]).toEqual(['out.json', 'out_00001.json']);
    expect(JSON.parse(target.published.get('out.json')!)).toEqual([{ a: 1 }, { a: 2 }]);
    expect(JSON.parse(target.published.get('out_00001.json')!)).toEqual([{ a: 3 }]);
    expect(target.ended).toBe(true);
  });

  for (const truncate of [undefined, 'fails'] as const) {
    it(`an output whose failed write cannot be cut back (${truncate ? 'truncate fails' : 'no truncate'}) is given up, and the next flush fails for the batches it held`, async () => {
      const target = new MemoryTarget(truncate);
      const sink = sinkOver(target);
      await sink.write(batch([{ a: 1 }]));
      target.failNext = true;
      await expect(sink.write(batch([{ a: 2 }]))).rejects.toThrow(WriteError);
      expect(target.aborted).toBe(1);
      await sink.write(batch([{ a: 2 }])); // the runtime's retry goes into a fresh output
      await expect(sink.flush()).rejects.toThrow(
        /failed after 1 records: connection reset; the records written into it since the last flush are kept for another run/,
      );
      // The fresh output was still published whole, and the next flush has nothing to report.
      expect(JSON.parse(target.published.get('out.json')!)).toEqual([{ a: 2 }]);
      await sink.write(batch([{ a: 3 }]));
      await sink.flush();
      expect(JSON.parse(target.published.get('out_00001.json')!)).toEqual([{ a: 3 }]);
    });
  }

  it('a failed write that the target can cut back keeps the output: the retry is not doubled and nothing is lost', async () => {
    const target = new MemoryTarget('works');
    const sink = sinkOver(target);
    await sink.write(batch([{ a: 1 }]));
    target.failNext = true;
    await expect(sink.write(batch([{ a: 2 }]))).rejects.toThrow(WriteError);
    await sink.write(batch([{ a: 2 }]));
    await sink.flush();
    expect(target.aborted).toBe(0);
    expect(JSON.parse(target.published.get('out.json')!)).toEqual([{ a: 1 }, { a: 2 }]);
  });

  describe('append mode: an output given up after a lost connection', () => {
    /** One synced batch, then the connection drops in the middle of the next write. */
    async function lostMidWrite(target: AppendTarget, sink: RollingFileSink) {
      await sink.write(batch([{ a: 1 }]));
      await sink.flush(); // synced: {a: 1} is delivered
      target.down = true;
      await expect(sink.write(batch([{ a: 2 }]))).rejects.toThrow(WriteError);
      target.down = false;
      expect(target.files.get('out.json')!.toString()).not.toMatch(/\]\n$/); // cut off mid-document
    }

    it('is cut back to what was synced when the run writes to it again, so the file stays one document', async () => {
      const target = new AppendTarget();
      const sink = appendSink(target);
      await lostMidWrite(target, sink);
      await sink.write(batch([{ a: 2 }])); // the runtime's retry: the same name, reopened
      await expect(sink.flush()).rejects.toThrow(
        /failed after 1 records: connection reset; the records written into it since the last flush are kept for another run/,
      );
      await sink.write(batch([{ a: 3 }]));
      await sink.close();
      expect(JSON.parse(target.files.get('out.json')!.toString())).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }]);
    });

    it('is cut back and closed with its tail when the sink closes, when nothing more was written to it', async () => {
      const target = new AppendTarget();
      const sink = appendSink(target);
      await lostMidWrite(target, sink);
      await expect(sink.flush()).rejects.toThrow(/failed after 1 records/);
      await sink.close();
      expect(JSON.parse(target.files.get('out.json')!.toString())).toEqual([{ a: 1 }]);
    });

    it('is left as it is when the peer is still out of reach at close, and a later run appending to it is told what to do', async () => {
      const target = new AppendTarget();
      const sink = appendSink(target);
      await lostMidWrite(target, sink);
      await expect(sink.flush()).rejects.toThrow(/failed after 1 records/);
      target.down = true;
      await sink.close(); // best effort: nothing to repair it with
      target.down = false;
      const left = target.files.get('out.json')!.toString();
      expect(left).not.toMatch(/\]\n$/);
      const later = appendSink(target);
      await expect(later.write(batch([{ a: 4 }]))).rejects.toThrow(
        /cannot append to remote:\/\/out\.json: it does not end with the serializer's closing .*; move it away or put \{timestamp\} in the template/,
      );
      expect(target.files.get('out.json')!.toString()).toBe(left);
    });

    it('a later run appends to a file it finished as before (the tail is cut off and written again)', async () => {
      const target = new AppendTarget();
      for (const a of [1, 2]) {
        const sink = appendSink(target);
        await sink.write(batch([{ a }]));
        await sink.close();
      }
      expect(JSON.parse(target.files.get('out.json')!.toString())).toEqual([{ a: 1 }, { a: 2 }]);
    });
  });
});
