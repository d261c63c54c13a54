import fs, { type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse } from 'yaml';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { ConfigError, WriteError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/observability/log.js';
import local, { type LocalSinkConfig } from '../../src/plugins/connectors/local/sink.js';
import type { Encoder, Rec, Sink, SinkBatch, SinkRunInfo, SourceMeta } from '../../src/plugins/types.js';
import { elapse } from '../helpers/wait.js';

// Tiny encoders built from the Encoder contract (the real serializers are separate modules).
const jsonArray: Encoder = {
  head: () => '[',
  body: (rs) => Buffer.from(rs.map((r) => JSON.stringify(r)).join(',')),
  separator: ',',
  tail: ']',
  one: (r) => Buffer.from(JSON.stringify(r)),
  extension: 'json',
};
const ndjson: Encoder = {
  head: () => '',
  body: (rs) => Buffer.from(rs.map((r) => `${JSON.stringify(r)}\n`).join('')),
  separator: '',
  tail: '',
  one: (r) => Buffer.from(JSON.stringify(r)),
  extension: 'ndjson',
};
const csv: Encoder = {
  head: (rs) => `${Object.keys(rs[0] ?? {}).join(',')}\n`,
  body: (rs) => Buffer.from(rs.map((r) => `${Object.values(r).join(',')}\n`).join('')),
  separator: '',
  tail: '',
  one: (r) => Buffer.from(Object.values(r).join(',')),
  extension: 'csv',
};

const META: SourceMeta = { source_filename: 'in.csv', source_path: '/src/in.csv' };
const RUN: SinkRunInfo = { runId: 'r1', pipeline: 'pm', startedAt: new Date('2024-03-05T07:08:09.123Z') };
const RUN2: SinkRunInfo = { runId: 'r2', pipeline: 'pm', startedAt: new Date('2024-03-05T08:00:00.000Z') };

let tmp: string;
let out: string;
beforeEach(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-local-sink-'));
  out = path.join(tmp, 'out');
});
afterEach(async () => {
  vi.restoreAllMocks();
  await fs.rm(tmp, { recursive: true, force: true });
});

function cfg(partial: Record<string, unknown>): LocalSinkConfig {
  const c = Value.Default(local.config, structuredClone(partial));
  expect(Value.Errors(local.config, c).First()?.message).toBeUndefined();
  return c as LocalSinkConfig;
}

function sinkOf(partial: Record<string, unknown>, encoder: Encoder = ndjson): Sink {
  return local.create(cfg({ path: out, ...partial }), {
    pipeline: 'pm',
    log: silentLogger,
    signal: new AbortController().signal,
    processed: new MemoryProcessedFiles(),
    skipProcessed: false,
    encoder,
  });
}

const recs = (from: number, n: number, extra: Rec = {}): Rec[] => Array.from({ length: n }, (_, i) => ({ n: from + i, ...extra }));

function batch(encoder: Encoder, records: Rec[], meta: SourceMeta = META): SinkBatch {
  return { payload: encoder.body(records), head: encoder.head(records), count: records.length, meta, first: records[0] };
}

const read = (rel: string) => fs.readFile(path.join(out, rel), 'utf8');
const ls = async (rel = '') => (await fs.readdir(path.join(out, rel))).sort();
const lines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Rec);

/** The FileHandle prototype, to observe fsync and inject write failures. */
async function fileHandleProto(): Promise<FileHandle> {
  const probe = await fs.open(tmp, 'r');
  await probe.close();
  return Object.getPrototypeOf(probe) as FileHandle;
}

/** Every file under `dir`, relative, '/'-separated. */
async function tree(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describe('local sink: plugin definition', () => {
  it('describes every field, and its examples validate and lint clean', () => {
    for (const [name, schema] of Object.entries(local.config.properties)) expect(schema.description, name).toMatch(/\S/);
    expect(local.accepts).toBe('payload');
    for (const key of ['retry_count', 'condition', 'transforms', 'serializer_out']) expect(local.config.properties).not.toHaveProperty(key);
    for (const ex of local.examples) {
      const { type, ...rest } = parse(ex.yaml) as Record<string, unknown>;
      expect(type).toBe('local');
      expect(local.lint?.(cfg(rest)), ex.title).toEqual([]);
    }
  });

  it('lints unknown tokens by name, escaping templates, and overwrite outside single mode', () => {
    expect(local.lint!(cfg({ path: '/o', filename_template: '{pipeline}_{date}.csv' }))).toEqual([
      { path: 'filename_template', message: expect.stringMatching(/unknown token \{date\}/) },
    ]);
    expect(local.lint!(cfg({ path: '/o', filename_template: '../{pipeline}' }))[0]?.path).toBe('filename_template');
    expect(local.lint!(cfg({ path: '/o', overwrite: false }))).toEqual([{ path: 'overwrite', message: expect.stringMatching(/single/) }]);
    expect(local.lint!(cfg({ path: '/o', overwrite: false, file_mode: 'single' }))).toEqual([]);
  });

  it('refuses to create with an unusable template', () => {
    expect(() => sinkOf({ filename_template: '{nope}.csv' })).toThrow(ConfigError);
  });
});

describe('local sink: append mode', () => {
  it('writes every batch of a run to one file named by the default template', async () => {
    const sink = sinkOf({});
    await sink.open!(RUN);
    await sink.write(batch(ndjson, recs(0, 2)));
    await sink.write(batch(ndjson, recs(2, 3)));
    await sink.close!();
    expect(await ls()).toEqual(['pm_20240305T070809Z.bin']);
    expect(lines(await read('pm_20240305T070809Z.bin')).map((r) => r.n)).toEqual([0, 1, 2, 3, 4]);
  });

  it('appends across runs to a file with a stable name', async () => {
    for (const [run, from] of [
      [RUN, 0],
      [RUN2, 10],
    ] as const) {
      const sink = sinkOf({ filename_template: '{pipeline}.ndjson' });
      await sink.open!(run);
      await sink.write(batch(ndjson, recs(from, 2)));
      await sink.close!();
    }
    expect(lines(await read('pm.ndjson')).map((r) => r.n)).toEqual([0, 1, 10, 11]);
  });

  it('builds one valid JSON array from many batches, and keeps it one array across runs', async () => {
    const sink = sinkOf({ filename_template: '{pipeline}.json' }, jsonArray);
    await sink.open!(RUN);
    for (let i = 0; i < 3; i++) await sink.write(batch(jsonArray, recs(i * 2, 2)));
    await sink.close!();
    expect((JSON.parse(await read('pm.json')) as Rec[]).map((r) => r.n)).toEqual([0, 1, 2, 3, 4, 5]);

    const again = sinkOf({ filename_template: '{pipeline}.json' }, jsonArray);
    await again.open!(RUN2);
    await again.write(batch(jsonArray, recs(6, 1)));
    await again.close!();
    expect((JSON.parse(await read('pm.json')) as Rec[]).map((r) => r.n)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('refuses to append to a document that does not end with the tail, naming the file', async () => {
    await fs.mkdir(out);
    await fs.writeFile(path.join(out, 'pm.json'), '[{"n":0}');
    const sink = sinkOf({ filename_template: '{pipeline}.json' }, jsonArray);
    await sink.open!(RUN);
    const err = await sink.write(batch(jsonArray, recs(1, 1))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect((err as WriteError).retryable).toBe(false);
    expect((err as WriteError).message).toContain(path.join(out, 'pm.json'));
    expect(await read('pm.json')).toBe('[{"n":0}');
  });

  it('writes the CSV header once per file, across batches and runs', async () => {
    for (const run of [RUN, RUN2]) {
      const sink = sinkOf({ filename_template: 'x.csv' }, csv);
      await sink.open!(run);
      await sink.write(batch(csv, [{ a: 1, b: 2 }]));
      await sink.write(batch(csv, [{ a: 3, b: 4 }]));
      await sink.close!();
    }
    expect(await read('x.csv')).toBe('a,b\n1,2\n3,4\n1,2\n3,4\n');
  });

  it('keeps one file per expanded name, e.g. per field value', async () => {
    const sink = sinkOf({ filename_template: '{field.dev}/{pipeline}.ndjson' });
    await sink.open!(RUN);
    await sink.write(batch(ndjson, recs(0, 1, { dev: 'a' })));
    await sink.write(batch(ndjson, recs(1, 1, { dev: 'b' })));
    await sink.write(batch(ndjson, recs(2, 1, { dev: 'a' })));
    await sink.write(batch(ndjson, recs(3, 1)));
    await sink.close!();
    expect(await tree(out)).toEqual(['a/pm.ndjson', 'b/pm.ndjson', 'unknown/pm.ndjson']);
    expect(lines(await read('a/pm.ndjson')).map((r) => r.n)).toEqual([0, 2]);
  });

  it('makes written data durable at flush (fsync), not at each unit end, and visible before close', async () => {
    const sync = vi.spyOn(await fileHandleProto(), 'sync');
    const sink = sinkOf({ filename_template: 'd.ndjson' });
    await sink.open!(RUN);
    await sink.write(batch(ndjson, recs(0, 2)));
    const before = sync.mock.calls.length;
    await sink.endUnit!(META);
    expect(sync.mock.calls.length).toBe(before);
    await sink.flush!();
    expect(sync.mock.calls.length).toBeGreaterThan(before);
    const after = sync.mock.calls.length;
    await sink.flush!(); // nothing new written: no second fsync
    expect(sync.mock.calls.length).toBe(after);
    expect(lines(await read('d.ndjson'))).toHaveLength(2);
    await sink.close!();
  });

  it('serializes concurrent writes so batches never interleave', async () => {
    const sink = sinkOf({ filename_template: 'c.json' }, jsonArray);
    await sink.open!(RUN);
    await Promise.all(Array.from({ length: 20 }, (_, i) => sink.write(batch(jsonArray, recs(i * 3, 3)))));
    await sink.close!();
    expect((JSON.parse(await read('c.json')) as Rec[]).map((r) => r.n)).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it('works without open(), naming files after the pipeline', async () => {
    const sink = sinkOf({ filename_template: '{pipeline}.ndjson' });
    await sink.write(batch(ndjson, recs(0, 1)));
    await sink.close!();
    expect(await ls()).toEqual(['pm.ndjson']);
  });
});

describe('local sink: template tokens', () => {
  it('expands every token into the written file name', async () => {
    const sink = sinkOf({
      filename_template:
        '{pipeline}/{timestamp}/{epoch}/{epoch_m}/{run_id}/{source_path}/{source_stem}-{source_suffix}-{source_filename}-{field.dev}-{part}-{index}.out',
      max_index: 999,
    });
    await sink.open!(RUN);
    await sink.write(
      batch(ndjson, recs(0, 1, { dev: 'rtr 1' }), { source_filename: 'A1.xml.gz', source_path: '/in/east/A1.xml.gz', source_relative_dir: 'east' }),
    );
    await sink.close!();
    expect(await tree(out)).toEqual([`pm/20240305T070809Z/1709622489/1709622489123/r1/east/A1.xml-.gz-A1.xml.gz-rtr_1-000-000.out`]);
  });

  it('never writes outside path, whatever the values', async () => {
    const sink = sinkOf({ filename_template: '{source_path}/{source_filename}_{field.v}' });
    await sink.open!(RUN);
    await sink.write(batch(ndjson, [{ v: '../../../escape' }], { source_filename: '../up', source_path: '/x/../../y', source_relative_dir: '../../..' }));
    await sink.write(batch(ndjson, [{ v: '..' }], { source_filename: '..', source_relative_dir: '/etc' }));
    await sink.close!();
    expect(await fs.readdir(tmp)).toEqual(['out']);
    expect(await tree(out)).toEqual(['.._up_.._.._.._escape', 'etc/___']);
  });
});

describe('local sink: single mode', () => {
  it('writes one file per source unit through a hidden temporary file, renamed at endUnit', async () => {
    const sink = sinkOf({ file_mode: 'single', filename_template: '{source_stem}.json' }, jsonArray);
    const a: SourceMeta = { source_filename: 'a.csv', source_path: '/in/a.csv' };
    const b: SourceMeta = { source_filename: 'b.csv', source_path: '/in/b.csv' };
    await sink.open!(RUN);
    await sink.write(batch(jsonArray, recs(0, 2), a));
    await sink.write(batch(jsonArray, recs(10, 1), b));
    await sink.write(batch(jsonArray, recs(2, 1), a));

    const pending = await ls();
    expect(pending).toHaveLength(2);
    expect(pending.every((n) => n.startsWith('.') && n.endsWith('.tmp'))).toBe(true);

    await sink.endUnit!(a);
    const afterA = await ls();
    expect(afterA.filter((n) => !n.startsWith('.'))).toEqual(['a.json']);
    expect((JSON.parse(await read('a.json')) as Rec[]).map((r) => r.n)).toEqual([0, 1, 2]);

    await sink.endUnit!(b);
    await sink.close!();
    expect(await ls()).toEqual(['a.json', 'b.json']);
    expect(JSON.parse(await read('b.json'))).toEqual([{ n: 10 }]);
  });

  it('publishes files of units never ended when the run closes', async () => {
    const sink = sinkOf({ file_mode: 'single', filename_template: '{source_stem}.ndjson' });
    await sink.open!(RUN);
    await sink.write(batch(ndjson, recs(0, 1)));
    await sink.close!();
    expect(await ls()).toEqual(['in.ndjson']);
  });

  it('replaces an existing file when overwrite is true', async () => {
    await fs.mkdir(out);
    await fs.writeFile(path.join(out, 'in.ndjson'), 'old\n');
    const sink = sinkOf({ file_mode: 'single', filename_template: '{source_stem}.ndjson' });
    await sink.open!(RUN);
    await sink.write(batch(ndjson, recs(0, 1)));
    await sink.endUnit!(META);
    await sink.close!();
    expect(await read('in.ndjson')).toBe('{"n":0}\n');
  });

  it('fails with a permanent WriteError naming the file when overwrite is false', async () => {
    await fs.mkdir(out);
    await fs.writeFile(path.join(out, 'in.ndjson'), 'old\n');
    const sink = sinkOf({ file_mode: 'single', filename_template: '{source_stem}.ndjson', overwrite: false });
    await sink.open!(RUN);
    const err = await sink.write(batch(ndjson, recs(0, 1))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect((err as WriteError).retryable).toBe(false);
    expect((err as Error).message).toContain(path.join(out, 'in.ndjson'));
    await sink.close!();
    expect(await ls()).toEqual(['in.ndjson']);
    expect(await read('in.ndjson')).toBe('old\n');
  });

  it('rolls single-mode files into parts, each published complete', async () => {
    const sink = sinkOf({ file_mode: 'single', filename_template: '{source_stem}.json', max_records: 2, max_index: 9 }, jsonArray);
    await sink.open!(RUN);
    for (let i = 0; i < 3; i++) await sink.write(batch(jsonArray, recs(i, 1)));
    expect((await ls()).filter((n) => !n.startsWith('.'))).toEqual(['in_0.json']);
    await sink.endUnit!(META);
    await sink.close!();
    expect(await ls()).toEqual(['in_0.json', 'in_1.json']);
    expect(JSON.parse(await read('in_1.json'))).toEqual([{ n: 2 }]);
  });
});

describe('local sink: rolling', () => {
  it('max_records rolls between batches, with zero-padded parts inserted before the extension', async () => {
    const sink = sinkOf({ filename_template: '{pipeline}.ndjson', max_records: 4, max_index: 999 });
    await sink.open!(RUN);
    for (let i = 0; i < 5; i++) await sink.write(batch(ndjson, recs(i * 2, 2)));
    await sink.close!();
    expect(await ls()).toEqual(['pm_000.ndjson', 'pm_001.ndjson', 'pm_002.ndjson']);
    expect(lines(await read('pm_000.ndjson')).map((r) => r.n)).toEqual([0, 1, 2, 3]);
    expect(lines(await read('pm_002.ndjson')).map((r) => r.n)).toEqual([8, 9]);
  });

  it('uses the {part} token when the template has one; the default width is 5 digits', async () => {
    const sink = sinkOf({ filename_template: 'p{part}/{pipeline}.ndjson', max_records: 1 });
    await sink.open!(RUN);
    await sink.write(batch(ndjson, recs(0, 1)));
    await sink.write(batch(ndjson, recs(1, 1)));
    await sink.close!();
    expect(await tree(out)).toEqual(['p00000/pm.ndjson', 'p00001/pm.ndjson']);
  });

  it('max_bytes counts separator and tail so every JSON part stays under it; a bigger batch gets a file of its own', async () => {
    const sink = sinkOf({ filename_template: 'b.json', max_bytes: 30 }, jsonArray);
    await sink.open!(RUN);
    // '[{"n":0}' is 8 bytes; each further batch adds ',{"n":k}' (8); the tail adds 1.
    for (let i = 0; i < 4; i++) await sink.write(batch(jsonArray, recs(i, 1)));
    await sink.write(batch(jsonArray, recs(100, 5)));
    await sink.write(batch(jsonArray, recs(9, 1)));
    await sink.close!();
    expect(await ls()).toEqual(['b_00000.json', 'b_00001.json', 'b_00002.json', 'b_00003.json']);
    expect(await read('b_00000.json')).toBe('[{"n":0},{"n":1},{"n":2}]'); // 25 bytes; one more would make 33
    expect(JSON.parse(await read('b_00001.json'))).toEqual([{ n: 3 }]);
    expect((JSON.parse(await read('b_00002.json')) as Rec[]).map((r) => r.n)).toEqual([100, 101, 102, 103, 104]);
    expect((await read('b_00002.json')).length).toBeGreaterThan(30);
    expect(JSON.parse(await read('b_00003.json'))).toEqual([{ n: 9 }]);
  });

  it('max_time rolls at the first write after the file has been open that long', async () => {
    const sink = sinkOf({ filename_template: 't.ndjson', max_time: 0.1 });
    await sink.open!(RUN);
    await sink.write(batch(ndjson, recs(0, 1)));
    await sink.write(batch(ndjson, recs(1, 1)));
    await elapse(150);
    await sink.write(batch(ndjson, recs(2, 1)));
    await sink.close!();
    expect(await ls()).toEqual(['t_00000.ndjson', 't_00001.ndjson']);
    expect(lines(await read('t_00000.ndjson')).map((r) => r.n)).toEqual([0, 1]);
  });

  it('fails permanently when the next part would exceed max_index, keeping the earlier parts', async () => {
    const sink = sinkOf({ filename_template: 'm.ndjson', max_records: 1, max_index: 2 });
    await sink.open!(RUN);
    for (let i = 0; i < 3; i++) await sink.write(batch(ndjson, recs(i, 1)));
    const err = await sink.write(batch(ndjson, recs(3, 1))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect((err as WriteError).retryable).toBe(false);
    expect((err as Error).message).toMatch(/max_index 2/);
    await sink.close!();
    expect(await ls()).toEqual(['m_0.ndjson', 'm_1.ndjson', 'm_2.ndjson']);
    expect(await read('m_2.ndjson')).toBe('{"n":2}\n');
  });
});

describe('local sink: write failures', () => {
  it('a file where the directory should be is a permanent WriteError with the path', async () => {
    await fs.writeFile(out, 'not a directory');
    const sink = sinkOf({ filename_template: 'sub/x.ndjson' });
    await sink.open!(RUN);
    const err = await sink.write(batch(ndjson, recs(0, 1))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect((err as WriteError).retryable).toBe(false);
    expect((err as Error).message).toContain(out);
  });

  it('cuts a half-written batch off, so a retry by the engine does not duplicate it', async () => {
    const proto = await fileHandleProto();
    const write = proto.write as (this: FileHandle, b: Buffer, offset: number, length: number) => Promise<unknown>;
    const sink = sinkOf({ filename_template: 'r.json' }, jsonArray);
    await sink.open!(RUN);
    await sink.write(batch(jsonArray, recs(0, 1)));
    vi.spyOn(proto, 'write').mockImplementationOnce(async function (this: FileHandle, buf: Buffer) {
      await write.call(this, buf, 0, 4); // a short write, then the disk fills up
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    } as never);
    const err = await sink.write(batch(jsonArray, recs(1, 1))).catch((e: unknown) => e);
    expect((err as WriteError).retryable).toBe(true);
    expect(await read('r.json')).toBe('[{"n":0}');
    await sink.write(batch(jsonArray, recs(1, 1)));
    await sink.close!();
    expect(JSON.parse(await read('r.json'))).toEqual([{ n: 0 }, { n: 1 }]);
  });

  it('a full disk is a retryable WriteError with the path', async () => {
    await fs.mkdir(out);
    await fs.symlink('/dev/full', path.join(out, 'full.ndjson'));
    const sink = sinkOf({ filename_template: 'full.ndjson' });
    await sink.open!(RUN);
    const err = await sink.write(batch(ndjson, recs(0, 1))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect((err as WriteError).retryable).toBe(true);
    expect((err as Error).message).toMatch(/full\.ndjson.*ENOSPC/);
    await sink.close!().catch(() => undefined);
  });
});
