// SVC_WATCH_PIPELINES (spec doc 2, docs/daemon.md): YAML written into SVC_PIPELINE_DIR after the
// start is registered, a change is a new version that is live at once, a deleted or renamed-away
// file deregisters its pipeline, an invalid file is logged and breaks nothing; off, nothing happens.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { expectError, finishedRun, localYaml, readNdjson, workArea } from '../api/_helpers.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { quiet, until } from '../helpers/wait.js';
import { tempDir } from '../helpers/fs.js';

function capturingLogger() {
  const lines: Record<string, any>[] = [];
  const log = pino({ level: 'warn' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

const names = async (d: TestDaemon): Promise<string[]> => (await d.call('GET', '/api/pipelines')).body.map((p: any) => p.name);
const state = async (d: TestDaemon, name: string) => (await d.call('GET', `/api/pipelines/${name}`)).body;

describe('SVC_WATCH_PIPELINES=true', () => {
  it('registers new files, makes a live new version on change, deregisters deleted files', async () => {
    const d = await testDaemon({ SVC_WATCH_PIPELINES: 'true' });
    const dir = d.settings.PIPELINE_DIR;
    const w = workArea(3);
    const file = join(dir, 'w1.yaml');

    writeFileSync(file, localYaml('w1', w));
    await until(async () => (await names(d)).includes('w1'));
    expect(await state(d, 'w1')).toMatchObject({ origin: 'file', file, version: 1 });

    // A change: a new version, and runs use the new config.
    const out2 = join(w.root, 'out2');
    writeFileSync(file, localYaml('w1', { ...w, outDir: out2, description: 'second' }));
    await until(async () => (await state(d, 'w1')).version === 2);
    expect(await state(d, 'w1')).toMatchObject({ description: 'second', config: { sinks: [{ path: out2 }] } });
    const versions = await d.call('GET', '/api/pipelines/w1/versions');
    expect(versions.body.map((v: any) => [v.version, v.is_active])).toEqual([
      [2, 1],
      [1, 0],
    ]);
    const t = await d.call('POST', '/api/pipelines/w1/run');
    expect((await finishedRun(d, t.body.run_id)).status).toBe('success');
    expect(readNdjson(join(out2, 'out.ndjson'))).toHaveLength(3);
    expect(readNdjson(w.outFile)).toEqual([]);

    // Editors save through a temporary file renamed over the original.
    writeFileSync(join(dir, '.w1.yaml.tmp'), localYaml('w1', { ...w, outDir: out2, description: 'third' }));
    renameSync(join(dir, '.w1.yaml.tmp'), file);
    await until(async () => (await state(d, 'w1')).version === 3);
    expect((await state(d, 'w1')).description).toBe('third');

    rmSync(file);
    await until(async () => (await d.call('GET', '/api/pipelines/w1')).status === 404);
    expectError(await d.call('GET', '/api/pipelines/w1'), 404);
    expect(await names(d)).toEqual([]);
  });

  it('deregisters a file renamed away, and follows a file moved to another YAML name', async () => {
    const d = await testDaemon({ SVC_WATCH_PIPELINES: 'true' });
    const dir = d.settings.PIPELINE_DIR;
    const w = workArea(1);
    writeFileSync(join(dir, 'a.yaml'), localYaml('a', w));
    writeFileSync(join(dir, 'b.yml'), localYaml('b', w));
    await until(async () => (await names(d)).length === 2);

    renameSync(join(dir, 'a.yaml'), join(dir, 'a.yaml.disabled'));
    await until(async () => (await d.call('GET', '/api/pipelines/a')).status === 404);

    // Same YAML under a new name: the pipeline stays, with its history; only its file changes.
    renameSync(join(dir, 'b.yml'), join(dir, 'b-renamed.yaml'));
    await until(async () => (await state(d, 'b')).file === join(dir, 'b-renamed.yaml'));
    expect(await state(d, 'b')).toMatchObject({ version: 1, origin: 'file' });
    expect(await names(d)).toEqual(['b']);

    // A file that now names another pipeline: the new one is registered, the old one leaves.
    writeFileSync(join(dir, 'b-renamed.yaml'), localYaml('c', w));
    await until(async () => (await d.call('GET', '/api/pipelines/b')).status === 404);
    expect(await names(d)).toEqual(['c']);
  });

  it('logs an invalid file and keeps serving the others (and the last good version of a broken one)', async () => {
    const { log, lines } = capturingLogger();
    const d = await testDaemon({ SVC_WATCH_PIPELINES: 'true' }, { log });
    const dir = d.settings.PIPELINE_DIR;
    const w = workArea(1);
    writeFileSync(join(dir, 'good.yaml'), localYaml('good', w));
    await until(async () => (await names(d)).includes('good'));

    writeFileSync(join(dir, 'bad.yaml'), 'version: "1"\npipeline:\n  name: bad\n  source: { type: nosuch }\n');
    await until(() => lines.some((l) => l.msg === 'pipeline file not loaded' && l.file === join(dir, 'bad.yaml')));
    // A broken edit of a loaded file: logged, the loaded version stays live.
    writeFileSync(join(dir, 'good.yaml'), 'pipeline: [unclosed\n');
    await until(() => lines.some((l) => l.msg === 'pipeline file not loaded' && l.file === join(dir, 'good.yaml')));
    expect(await state(d, 'good')).toMatchObject({ version: 1, status: 'stopped' });

    // The watcher still works and the API still answers.
    writeFileSync(join(dir, 'other.yaml'), localYaml('other', w));
    await until(async () => (await names(d)).includes('other'));
    expect(await names(d)).toEqual(['good', 'other']);
    expect((await d.call('GET', '/api/health')).status).toBe(200);
    const t = await d.call('POST', '/api/pipelines/good/run');
    expect((await finishedRun(d, t.body.run_id)).status).toBe('success');

    // Fixing the file loads it.
    writeFileSync(join(dir, 'bad.yaml'), localYaml('bad', w));
    await until(async () => (await names(d)).includes('bad'));
  });

  it('watches a directory that appears after the start', async () => {
    const root = tempDir('svc-watch-');
    const dir = join(root, 'later');
    const d = await testDaemon({ SVC_WATCH_PIPELINES: 'true', SVC_PIPELINE_DIR: dir });
    expect(await names(d)).toEqual([]);
    mkdirSync(dir);
    writeFileSync(join(dir, 'late.yaml'), localYaml('late', workArea(1)));
    await until(async () => (await names(d)).includes('late'), 5000);
  });
});

describe('SVC_WATCH_PIPELINES=false', () => {
  it('ignores files written after the start', async () => {
    const d = await testDaemon({ SVC_WATCH_PIPELINES: 'false' });
    writeFileSync(join(d.settings.PIPELINE_DIR, 'w1.yaml'), localYaml('w1', workArea(1)));
    await quiet(1000);
    expect(await names(d)).toEqual([]);
    // ... until asked to rescan.
    expect((await d.call('POST', '/api/pipelines/reload')).body).toMatchObject({ reloaded: 1 });
    expect(await names(d)).toEqual(['w1']);
  });
});
