// The webhook spool (src/plugins/connector-runtime/spool.ts): what append() resolved survives a reopen until it is
// committed; concurrent appends share fsyncs (group commit); a torn tail is ignored; segments roll
// and are deleted once committed past; a failed write rejects and the spool goes on in a new segment.
import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Spool, type Position } from '../../src/plugins/connector-runtime/spool.js';
import type { Logger } from '../../src/observability/log.js';
import { tempDir } from '../helpers/fs.js';

/** The FileHandle class is not exported by node:fs/promises; reach its prototype through an instance. */
async function fileHandleProto(): Promise<Record<'datasync' | 'sync' | 'writev', (...a: unknown[]) => Promise<unknown>>> {
  const fh = await open(fileURLToPath(import.meta.url), 'r');
  const proto = Object.getPrototypeOf(fh);
  await fh.close();
  return proto;
}

const spools: Spool[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of spools.splice(0)) await s.close();
});

async function openSpool(dir: string, opts: Parameters<typeof Spool.open>[1] = {}) {
  const s = await Spool.open(dir, opts);
  spools.push(s);
  return s;
}

async function reopen(s: Spool, opts: Parameters<typeof Spool.open>[1] = {}) {
  await s.close();
  spools.splice(spools.indexOf(s), 1);
  return openSpool(s.dir, opts);
}

async function replayed(s: Spool): Promise<{ body: string; position: Position }[]> {
  const out: { body: string; position: Position }[] = [];
  for await (const r of s.replay()) out.push({ body: r.body.toString(), position: r.position });
  return out;
}

const segments = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.seg'))
    .sort();

function recordingLogger() {
  const warnings: string[] = [];
  const errors: string[] = [];
  const log = {
    warn: (_o: unknown, msg: string) => warnings.push(msg),
    error: (o: { err?: string }, msg: string) => errors.push(`${msg}: ${o.err}`),
    info: () => {},
    debug: () => {},
  } as unknown as Logger;
  return { log, warnings, errors };
}

describe('spool', () => {
  it('replays what was appended and not committed, across reopens; positions keep growing', async () => {
    const dir = join(tempDir('svc-spool-'), 'nested', 'spool');
    let s = await openSpool(dir);
    const positions: Position[] = [];
    for (const b of ['one', 'two', '', 'four', 'five']) positions.push(await s.append(Buffer.from(b)));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(positions).size).toBe(5);

    s = await reopen(s);
    expect(await replayed(s)).toEqual(['one', 'two', '', 'four', 'five'].map((body, i) => ({ body, position: positions[i] })));
    // The first three were delivered: only the last two come again.
    s.commit(positions[2]!);
    s = await reopen(s);
    expect(await replayed(s)).toEqual([
      { body: 'four', position: positions[3] },
      { body: 'five', position: positions[4] },
    ]);
    // New appends land after the old records.
    const six = await s.append(Buffer.from('six'));
    expect(six).toBeGreaterThan(positions[4]!);
    s = await reopen(s);
    expect((await replayed(s)).map((r) => r.body)).toEqual(['four', 'five', 'six']);
    s.commit(six);
    s = await reopen(s);
    expect(await replayed(s)).toEqual([]);
    expect(await s.append(Buffer.from('seven'))).toBeGreaterThan(six);
  });

  it('group commit: 2000 concurrent appends take a handful of fdatasyncs, not 2000', async () => {
    const proto = await fileHandleProto();
    const datasync = vi.spyOn(proto, 'datasync');
    const sync = vi.spyOn(proto, 'sync');
    const writev = vi.spyOn(proto, 'writev');
    const s = await openSpool(tempDir('svc-spool-'));
    const n = 2000;
    const positions = await Promise.all(Array.from({ length: n }, (_, i) => s.append(Buffer.from(JSON.stringify({ i, pad: 'x'.repeat(200) })))));
    // Resolved in append order: positions strictly increase with i.
    for (let i = 1; i < n; i++) expect(positions[i]!).toBeGreaterThan(positions[i - 1]!);
    // Every append is durable when it resolves, and they shared the fsyncs.
    expect(datasync.mock.calls.length).toBeGreaterThanOrEqual(1);
    expect(datasync.mock.calls.length).toBeLessThanOrEqual(5);
    expect(writev.mock.calls.length).toBe(datasync.mock.calls.length);
    expect(sync.mock.calls.length).toBeLessThanOrEqual(1); // the directory, once, for the new segment
    console.log(`group commit: ${n} appends, ${datasync.mock.calls.length} fdatasync, ${writev.mock.calls.length} writev, ${sync.mock.calls.length} fsync`);

    // Appends that trickle in while a write is in progress are grouped too.
    datasync.mockClear();
    const waves: Promise<Position>[] = [];
    for (let w = 0; w < 20; w++) {
      for (let i = 0; i < 50; i++) waves.push(s.append(Buffer.from(`w${w}-${i}`)));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(waves);
    expect(datasync.mock.calls.length).toBeLessThan(20);
    console.log(`group commit: 20 waves of 50 appends, ${datasync.mock.calls.length} fdatasync`);

    const again = await reopen(s);
    expect((await replayed(again)).length).toBe(n + 1000);
  });

  it('a torn or zero-filled tail is ignored (and logged); records before it and in later segments replay', async () => {
    const dir = tempDir('svc-spool-');
    let s = await openSpool(dir);
    const a = await s.append(Buffer.from('alpha'));
    await s.append(Buffer.from('beta'));
    await s.close();
    spools.splice(0);
    const [seg] = segments(dir);
    // A crash mid-write: a header that promises 100 bytes and only 3 of them.
    const torn = Buffer.alloc(8 + 3);
    torn.writeUInt32LE(100, 0);
    appendFileSync(join(dir, seg!), torn);

    const first = recordingLogger();
    s = await openSpool(dir, { log: first.log });
    expect((await replayed(s)).map((r) => r.body)).toEqual(['alpha', 'beta']);
    expect(first.warnings.join('\n')).toMatch(/torn record/);
    // The spool goes on in a new segment; its records replay after the torn one.
    await s.append(Buffer.from('gamma'));
    s.commit(a);
    await s.close();
    spools.splice(0);
    // A size extended with zeros (data never written) is torn too, never read as empty records.
    const [, seg2] = segments(dir);
    appendFileSync(join(dir, seg2!), Buffer.alloc(64));

    const second = recordingLogger();
    s = await openSpool(dir, { log: second.log });
    expect((await replayed(s)).map((r) => r.body)).toEqual(['beta', 'gamma']);
    expect(second.warnings.filter((w) => /torn record/.test(w))).toHaveLength(2);
  });

  it('segments roll at segmentBytes and are deleted once committed past', async () => {
    const dir = tempDir('svc-spool-');
    let s = await openSpool(dir, { segmentBytes: 1000, commitIntervalMs: 10 });
    const positions: Position[] = [];
    for (let i = 0; i < 50; i++) positions.push(await s.append(Buffer.alloc(92, 97 + (i % 26))));
    // 50 records of 100 bytes (8 header + 92) in 1000-byte segments.
    expect(segments(dir).length).toBe(5);
    s.commit(positions[24]!);
    // The mark reaches the disk by itself (no close needed): what a crash relies on.
    await vi.waitFor(() => expect(readFileSync(join(dir, 'committed'), 'utf8')).toBe(`${positions[24]}\n`));
    await vi.waitFor(() => expect(segments(dir).length).toBe(3));
    s = await reopen(s, { segmentBytes: 1000 });
    expect((await replayed(s)).map((r) => r.position)).toEqual(positions.slice(25));
    s.commit(positions[49]!);
    s = await reopen(s);
    expect(segments(dir)).toEqual([]);
    expect(await replayed(s)).toEqual([]);
    expect(await s.append(Buffer.from('next'))).toBeGreaterThan(positions[49]!);
  });

  it('a failed write rejects its appends (no file names in the message) and the next write goes to a new segment', async () => {
    const dir = tempDir('svc-spool-');
    const { log, errors } = recordingLogger();
    let s = await openSpool(dir, { log });
    await s.append(Buffer.from('before'));
    const proto = await fileHandleProto();
    vi.spyOn(proto, 'writev').mockRejectedValueOnce(Object.assign(new Error(`EIO: i/o error, write '${dir}/x'`), { code: 'EIO' }));
    const failed = await Promise.allSettled([s.append(Buffer.from('lost-1')), s.append(Buffer.from('lost-2'))]);
    expect(failed.map((f) => f.status)).toEqual(['rejected', 'rejected']);
    const reason = (failed[0] as PromiseRejectedResult).reason as Error;
    expect(reason.message).toBe('spool write failed (EIO)');
    // The log has the whole story, once per failed write.
    expect(errors).toEqual([`spool: write failed; the senders are told to retry: EIO: i/o error, write '${dir}/x'`]);
    const after = await s.append(Buffer.from('after'));
    expect(segments(dir).length).toBe(2);
    s = await reopen(s);
    expect(await replayed(s)).toEqual([
      { body: 'before', position: expect.any(Number) },
      { body: 'after', position: after },
    ]);
  });

  it('one directory is one spool: a second open in this process is refused until the first is closed', async () => {
    const dir = tempDir('svc-spool-');
    const s = await openSpool(dir);
    await expect(Spool.open(dir)).rejects.toThrow(/already open/);
    await reopen(s);
    expect(existsSync(dir)).toBe(true);
  });
});
