import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileProcessedFiles, MemoryProcessedFiles, defaultStateDir, processedFilesPath } from '../../src/plugins/connector-runtime/processed-files.js';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-processed-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('MemoryProcessedFiles', () => {
  it('remembers added keys only', async () => {
    const p = new MemoryProcessedFiles();
    expect(await p.has('a')).toBe(false);
    await p.add('a');
    expect(await p.has('a')).toBe(true);
    expect(await p.has('b')).toBe(false);
  });
});

describe('FileProcessedFiles', () => {
  it('persists keys so a new instance (a new process) still knows them', async () => {
    const file = path.join(dir, 'state', 'deep', 'p.jsonl');
    const first = new FileProcessedFiles(file);
    expect(await first.has('/in/a.csv|10|1000')).toBe(false);
    await first.add('/in/a.csv|10|1000');
    await first.add('/in/with "quotes"\nand newline|1|2');
    await first.add('/in/a.csv|10|1000'); // duplicate: not written twice

    const lines = (await fs.readFile(file, 'utf8')).split('\n').filter(Boolean);
    expect(lines).toHaveLength(2);

    const second = new FileProcessedFiles(file);
    expect(await second.has('/in/a.csv|10|1000')).toBe(true);
    expect(await second.has('/in/with "quotes"\nand newline|1|2')).toBe(true);
    expect(await second.has('/in/a.csv|11|1000')).toBe(false);
  });

  it('ignores a line torn by a crash and starts the next append on its own line', async () => {
    const file = path.join(dir, 'p.jsonl');
    await fs.writeFile(file, '"kept"\n"torn-without-end');
    const p = new FileProcessedFiles(file);
    expect(await p.has('kept')).toBe(true);
    expect(await p.has('torn-without-end')).toBe(false);
    await p.add('next');
    const reloaded = new FileProcessedFiles(file);
    expect(await reloaded.has('next')).toBe(true);
    expect(await reloaded.has('kept')).toBe(true);
  });

  it('keeps every key when many adds run concurrently', async () => {
    const file = path.join(dir, 'p.jsonl');
    const p = new FileProcessedFiles(file);
    const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
    await Promise.all(keys.map((k) => p.add(k)));
    const reloaded = new FileProcessedFiles(file);
    for (const k of keys) expect(await reloaded.has(k)).toBe(true);
    expect((await fs.readFile(file, 'utf8')).split('\n').filter(Boolean)).toHaveLength(50);
  });

  it('does not create the file until something is added', async () => {
    const file = path.join(dir, 'p.jsonl');
    expect(await new FileProcessedFiles(file).has('x')).toBe(false);
    await expect(fs.access(file)).rejects.toThrow();
  });
});

describe('state directory', () => {
  const saved = process.env.SVC_STATE_DIR;
  afterEach(() => {
    if (saved === undefined) delete process.env.SVC_STATE_DIR;
    else process.env.SVC_STATE_DIR = saved;
  });

  it('is SVC_STATE_DIR when set, else ~/.svc/state', () => {
    process.env.SVC_STATE_DIR = '/var/lib/svc';
    expect(defaultStateDir()).toBe('/var/lib/svc');
    delete process.env.SVC_STATE_DIR;
    expect(defaultStateDir()).toBe(path.join(os.homedir(), '.svc', 'state'));
    expect(processedFilesPath('pm/east', '/s')).toBe('/s/pm_east.processed.jsonl');
  });
});
