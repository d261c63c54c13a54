import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse } from 'yaml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileProcessedFiles, MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { SourceError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/observability/log.js';
import local, { type LocalSourceConfig } from '../../src/plugins/connectors/local/source.js';
import type { PluginContext, SourceUnit } from '../../src/plugins/types.js';

let tmp: string;
let inDir: string;
beforeEach(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-local-src-'));
  inDir = path.join(tmp, 'in');
  await fs.mkdir(inDir);
});
afterEach(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

/** A config as the runtime hands it over: defaults applied, then checked against the schema. */
function cfg(partial: Record<string, unknown>): LocalSourceConfig {
  const c = Value.Default(local.config, structuredClone(partial));
  expect(Value.Errors(local.config, c).First()?.message).toBeUndefined();
  return c as LocalSourceConfig;
}

const ctxOf = (over: Partial<PluginContext> = {}): PluginContext => ({
  pipeline: 'p',
  log: silentLogger,
  signal: new AbortController().signal,
  processed: new MemoryProcessedFiles(),
  skipProcessed: false,
  ...over,
});

async function write(rel: string, content: string | Buffer = rel): Promise<string> {
  const abs = path.join(inDir, rel);
  await fs.mkdir(path.dirname(abs), { recursive: true });
  await fs.writeFile(abs, content);
  return abs;
}

async function readUnit(u: SourceUnit): Promise<string> {
  const parts: Buffer[] = [];
  for await (const b of u.read()) parts.push(b);
  return Buffer.concat(parts).toString();
}

/** One run: reads every unit, then finalizes it with `delivered`. Returns the units and notes. */
async function run(c: LocalSourceConfig, ctx = ctxOf(), delivered = true, signal = new AbortController().signal) {
  const source = local.create(c, ctx);
  const units: { unit: SourceUnit; text: string }[] = [];
  for await (const unit of source.units(signal)) {
    const text = await readUnit(unit);
    await unit.done?.(delivered);
    units.push({ unit, text });
  }
  return { units, names: units.map((u) => u.unit.meta.source_filename), notes: source.notes ?? [] };
}

const exists = (p: string) =>
  fs.access(p).then(
    () => true,
    () => false,
  );
/** The iterator of a source's units, to take them one at a time. */
const iterate = <T>(units: AsyncIterable<T>) => units[Symbol.asyncIterator]();
const ls = async (d: string) => (await fs.readdir(d)).sort();

describe('local source: plugin definition', () => {
  it('describes every field and its examples validate and lint clean', () => {
    for (const [name, schema] of Object.entries(local.config.properties)) {
      expect(schema.description, name).toMatch(/\S/);
    }
    expect(local.key).toBe('local');
    expect(local.mode).toBe('batch');
    expect(local.examples.length).toBeGreaterThanOrEqual(2);
    for (const ex of local.examples) {
      const { type, ...rest } = parse(ex.yaml) as Record<string, unknown>;
      expect(type).toBe('local');
      const c = cfg(rest);
      expect(local.lint?.(c), ex.title).toEqual([]);
    }
  });

  it('lints move with delete, move onto path, and a pattern with a directory', () => {
    const issues = local.lint!(cfg({ path: '/in', move_after_read: '/in/../in/', delete_after_read: true, file_pattern: 'sub/*.csv' }));
    expect(issues.map((i) => i.path).sort()).toEqual(['delete_after_read', 'file_pattern', 'move_after_read']);
  });

  it('rejects unknown keys and wrong types', () => {
    expect(Value.Check(local.config, Value.Default(local.config, { path: '/x', pattern: '*' }))).toBe(false);
    expect(Value.Check(local.config, Value.Default(local.config, { path: '/x', recursive: 'yes' }))).toBe(false);
  });
});

describe('local source: listing', () => {
  it('yields files in path order with their metadata and streams their bytes', async () => {
    await write('b.csv', 'bbb');
    await write('a.csv', 'a');
    await write('.hidden.csv');
    await write('sub/c.csv');
    const mtime = new Date('2024-01-02T03:04:05.000Z');
    await fs.utimes(path.join(inDir, 'a.csv'), mtime, mtime);

    const { units, names } = await run(cfg({ path: inDir }));
    expect(names).toEqual(['a.csv', 'b.csv']);
    const a = units[0]!;
    expect(a.text).toBe('a');
    expect(a.unit.size).toBe(1);
    expect(a.unit.meta).toMatchObject({
      source_filename: 'a.csv',
      source_path: path.join(inDir, 'a.csv'),
      source_dir: inDir,
      source_size: 1,
      source_mtime: '2024-01-02T03:04:05.000Z',
      source_relative_dir: '',
    });
  });

  it('filters names with file_pattern globs', async () => {
    for (const n of ['a.csv', 'b.txt', 'c.xml', 'd.CSV']) await write(n);
    expect((await run(cfg({ path: inDir, file_pattern: '*.csv' }))).names).toEqual(['a.csv']);
    expect((await run(cfg({ path: inDir, file_pattern: '*.{csv,txt}' }))).names).toEqual(['a.csv', 'b.txt']);
    expect((await run(cfg({ path: inDir, file_pattern: '[bc].*' }))).names).toEqual(['b.txt', 'c.xml']);
  });

  it('reads subdirectories only when recursive, in path order, with the relative directory', async () => {
    await write('z.csv');
    await write('a/y.csv');
    await write('a/b/x.csv');
    await write('a/b/skip.txt');
    expect((await run(cfg({ path: inDir }))).names).toEqual(['z.csv']);
    const { units } = await run(cfg({ path: inDir, recursive: true, file_pattern: '*.csv' }));
    expect(units.map((u) => u.unit.meta.source_path)).toEqual([path.join(inDir, 'a/b/x.csv'), path.join(inDir, 'a/y.csv'), path.join(inDir, 'z.csv')]);
    expect(units.map((u) => u.unit.meta.source_relative_dir)).toEqual(['a/b', 'a', '']);
  });

  it('accepts a single file as path', async () => {
    const f = await write('only.csv', 'x,y');
    await write('other.csv');
    const { units } = await run(cfg({ path: f }));
    expect(units.map((u) => u.text)).toEqual(['x,y']);
  });

  it('streams large files in chunks of at most 1 MiB', async () => {
    await write('big.bin', Buffer.alloc(3 * 1024 * 1024 + 5, 7));
    const source = local.create(cfg({ path: inDir }), ctxOf());
    for await (const u of source.units(new AbortController().signal)) {
      const sizes: number[] = [];
      for await (const b of u.read()) sizes.push(b.length);
      expect(sizes.length).toBeGreaterThanOrEqual(4);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(1024 * 1024);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(3 * 1024 * 1024 + 5);
    }
  });

  it('fails with a SourceError that says what to do when path does not exist', async () => {
    const source = local.create(cfg({ path: path.join(tmp, 'nope') }), ctxOf());
    const it = source.units(new AbortController().signal)[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toThrow(SourceError);
    await expect(iterate(local.create(cfg({ path: path.join(tmp, 'nope') }), ctxOf()).units(new AbortController().signal)).next()).rejects.toThrow(
      /does not exist; create it or correct 'path'/,
    );
  });

  it('fails with a SourceError when path cannot be read (a file in the way)', async () => {
    const f = await write('plain.txt');
    const it = iterate(local.create(cfg({ path: path.join(f, 'sub') }), ctxOf()).units(new AbortController().signal));
    await expect(it.next()).rejects.toThrow(SourceError);
  });

  it.skipIf(process.getuid?.() === 0)('fails with a SourceError when path is not readable', async () => {
    await fs.chmod(inDir, 0o000);
    try {
      const it = iterate(local.create(cfg({ path: inDir }), ctxOf()).units(new AbortController().signal));
      await expect(it.next()).rejects.toThrow(/not readable/);
    } finally {
      await fs.chmod(inDir, 0o755);
    }
  });
});

describe('local source: after delivery', () => {
  it('moves delivered files, creating the target and keeping the sub-path when recursive', async () => {
    await write('a.csv');
    await write('d/b.csv');
    const archive = path.join(tmp, 'archive', 'deep');
    await run(cfg({ path: inDir, recursive: true, move_after_read: archive }));
    expect(await ls(inDir)).toEqual(['d']);
    expect(await ls(path.join(inDir, 'd'))).toEqual([]);
    expect(await fs.readFile(path.join(archive, 'a.csv'), 'utf8')).toBe('a.csv');
    expect(await fs.readFile(path.join(archive, 'd', 'b.csv'), 'utf8')).toBe('d/b.csv');
  });

  it('never overwrites in the move target: taken names get _1, _2 before the extension', async () => {
    const archive = path.join(tmp, 'archive');
    await fs.mkdir(archive);
    await fs.writeFile(path.join(archive, 'a.csv'), 'old');
    await fs.writeFile(path.join(archive, 'a_1.csv'), 'old1');
    await write('a.csv', 'new');
    await run(cfg({ path: inDir, move_after_read: archive }));
    expect(await ls(archive)).toEqual(['a.csv', 'a_1.csv', 'a_2.csv']);
    expect(await fs.readFile(path.join(archive, 'a.csv'), 'utf8')).toBe('old');
    expect(await fs.readFile(path.join(archive, 'a_2.csv'), 'utf8')).toBe('new');
    expect(await exists(path.join(inDir, 'a.csv'))).toBe(false);
  });

  it('does not re-read files moved into a directory inside path', async () => {
    await write('a.csv');
    const archive = path.join(inDir, 'done');
    expect((await run(cfg({ path: inDir, recursive: true, move_after_read: archive }))).names).toEqual(['a.csv']);
    expect((await run(cfg({ path: inDir, recursive: true, move_after_read: archive }))).names).toEqual([]);
    expect(await ls(archive)).toEqual(['a.csv']);
  });

  it('deletes delivered files with delete_after_read', async () => {
    await write('a.csv');
    await write('keep.txt');
    await run(cfg({ path: inDir, file_pattern: '*.csv', delete_after_read: true }));
    expect(await ls(inDir)).toEqual(['keep.txt']);
  });

  it('leaves undelivered files in place, unmoved and unmarked', async () => {
    await write('a.csv', 'x');
    const processed = new MemoryProcessedFiles();
    const archive = path.join(tmp, 'archive');
    await run(cfg({ path: inDir, move_after_read: archive, skip_processed: true }), ctxOf({ processed }), false);
    await run(cfg({ path: inDir, delete_after_read: true, skip_processed: true }), ctxOf({ processed }), false);
    expect(await ls(inDir)).toEqual(['a.csv']);
    expect(await exists(archive)).toBe(false);
    expect((await run(cfg({ path: inDir, skip_processed: true }), ctxOf({ processed }))).names).toEqual(['a.csv']);
  });

  it('propagates a failing move from done()', async () => {
    await write('a.csv');
    const blocker = path.join(tmp, 'blocker');
    await fs.writeFile(blocker, 'a file, not a directory');
    await expect(run(cfg({ path: inDir, move_after_read: blocker }))).rejects.toThrow(/EEXIST|ENOTDIR/);
    expect(await ls(inDir)).toEqual(['a.csv']);
  });
});

describe('local source: skip_processed', () => {
  it('skips files delivered by an earlier run, remembered on disk, and rereads rewritten ones', async () => {
    await write('a.csv', 'one');
    await write('b.csv', 'two');
    const state = path.join(tmp, 'state', 'p.processed.jsonl');
    const c = cfg({ path: inDir, skip_processed: true });

    expect((await run(c, ctxOf({ processed: new FileProcessedFiles(state) }))).names).toEqual(['a.csv', 'b.csv']);

    const second = await run(c, ctxOf({ processed: new FileProcessedFiles(state) }));
    expect(second.names).toEqual([]);
    expect(second.notes).toEqual(['skipped 2 files already processed']);

    await write('b.csv', 'two, rewritten');
    const later = new Date(Date.now() + 5_000);
    await fs.utimes(path.join(inDir, 'b.csv'), later, later);
    const third = await run(c, ctxOf({ processed: new FileProcessedFiles(state) }));
    expect(third.names).toEqual(['b.csv']);
    expect(third.notes).toEqual(['skipped 1 file already processed']);
  });

  it('follows the pipeline-level skip_processed too', async () => {
    await write('a.csv');
    const processed = new MemoryProcessedFiles();
    const c = cfg({ path: inDir });
    await run(c, ctxOf({ processed, skipProcessed: true }));
    expect((await run(c, ctxOf({ processed, skipProcessed: true }))).names).toEqual([]);
    expect((await run(c, ctxOf({ processed, skipProcessed: false }))).names).toEqual(['a.csv']);
  });

  it('does not remember anything when skip_processed is off', async () => {
    await write('a.csv');
    const processed = new MemoryProcessedFiles();
    await run(cfg({ path: inDir }), ctxOf({ processed }));
    expect((await run(cfg({ path: inDir, skip_processed: true }), ctxOf({ processed }))).names).toEqual(['a.csv']);
  });
});

describe('local source: file-done guards', () => {
  it('file_min_age_seconds skips files modified too recently', async () => {
    await write('old.csv');
    await write('new.csv');
    const old = new Date(Date.now() - 120_000);
    await fs.utimes(path.join(inDir, 'old.csv'), old, old);
    const { names, notes } = await run(cfg({ path: inDir, file_min_age_seconds: 60 }));
    expect(names).toEqual(['old.csv']);
    expect(notes).toEqual(['skipped 1 file younger than file_min_age_seconds (60 s)']);
  });

  it('file_stability_seconds skips a file that is still growing', async () => {
    await write('steady.csv', 'done');
    const growing = await write('growing.csv', 'x');
    const timer = setInterval(() => void fs.appendFile(growing, 'x'), 40);
    try {
      const started = Date.now();
      const { names, notes } = await run(cfg({ path: inDir, file_stability_seconds: 0.4 }));
      expect(Date.now() - started).toBeGreaterThanOrEqual(390);
      expect(names).toEqual(['steady.csv']);
      expect(notes).toEqual(['skipped 1 file still changing after file_stability_seconds (0.4 s)']);
    } finally {
      clearInterval(timer);
    }
  });

  it('a stop during the stability wait ends the run at once without units', async () => {
    await write('a.csv');
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 50);
    const started = Date.now();
    const { names } = await run(cfg({ path: inDir, file_stability_seconds: 30 }), ctxOf({ signal: stop.signal }));
    expect(names).toEqual([]);
    expect(Date.now() - started).toBeLessThan(5_000);

    const stop2 = new AbortController();
    setTimeout(() => stop2.abort(), 50);
    expect((await run(cfg({ path: inDir, file_stability_seconds: 30 }), ctxOf(), true, stop2.signal)).names).toEqual([]);
  });

  it('file_done_suffix collects only done files, strips the suffix from the name and globs on the stripped name', async () => {
    await write('a.csv.done', 'A');
    await write('b.csv', 'B');
    await write('c.txt.done', 'C');
    await write('.done');
    const { units } = await run(cfg({ path: inDir, file_pattern: '*.csv', file_done_suffix: '.done' }));
    expect(units.map((u) => u.unit.meta.source_filename)).toEqual(['a.csv']);
    expect(units[0]!.unit.meta.source_path).toBe(path.join(inDir, 'a.csv.done'));
    expect(units[0]!.text).toBe('A');
  });

  it('moves and deletes the real (suffixed) file, numbering collisions before the extension', async () => {
    const archive = path.join(tmp, 'archive');
    await fs.mkdir(archive);
    await fs.writeFile(path.join(archive, 'a.csv.done'), 'old');
    await write('a.csv.done', 'A');
    await run(cfg({ path: inDir, file_done_suffix: '.done', move_after_read: archive }));
    expect(await ls(archive)).toEqual(['a.csv.done', 'a_1.csv.done']);
    expect(await fs.readFile(path.join(archive, 'a_1.csv.done'), 'utf8')).toBe('A');

    await write('b.csv.done');
    await write('b.csv');
    await run(cfg({ path: inDir, file_done_suffix: '.done', delete_after_read: true }));
    expect(await ls(inDir)).toEqual(['b.csv']);
  });
});
