// writeFileDurably: all or nothing, and no temp file left behind when the write fails.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileDurably } from '../../src/util/durable.js';
import { tempDir } from '../helpers/fs.js';

describe('writeFileDurably', () => {
  it('replaces the content, and a write that cannot land leaves the folder as it was', async () => {
    const dir = tempDir('svc-durable-');
    await writeFileDurably(join(dir, 'a.json'), '{"v":1}');
    await writeFileDurably(join(dir, 'a.json'), '{"v":2}');
    expect(readFileSync(join(dir, 'a.json'), 'utf8')).toBe('{"v":2}');
    // The target is a folder: the rename fails.
    mkdirSync(join(dir, 'taken'));
    await expect(writeFileDurably(join(dir, 'taken'), 'x')).rejects.toThrow();
    expect(readdirSync(dir).sort()).toEqual(['a.json', 'taken']);
  });
});
