// Deleted pipelines (issue 17): DELETE /api/pipelines/<name> removes the pipeline's webhook spool
// and any file-based processed memory under the state directory; a new pipeline of the same name
// starts empty (nothing of the old one replayed), and other pipelines keep theirs.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readNdjson, register, webhookYaml, workArea } from '../api/_helpers.js';
import { FileProcessedFiles, processedFilesPath } from '../../src/plugins/connector-runtime/processed-files.js';
import { testDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';

describe('a deleted pipeline takes its files along', () => {
  it('DELETE removes the webhook spool and file-based memory; the same name registered again replays nothing', async () => {
    const d = await testDaemon();
    const state = join(d.dir, 'state');
    const w = workArea(0);
    // A sink that cannot write (its folder is a file): every accepted body stays in the spool.
    const blocked = join(w.root, 'not-a-folder');
    writeFileSync(blocked, '');
    await register(d, webhookYaml('hooked', { path: 'hooked/in', outDir: join(blocked, 'out') }));
    await register(d, webhookYaml('other', { path: 'other/in', outDir: join(w.root, 'other-out') }));
    await until(async () => (await d.call('POST', '/webhooks/hooked/in', { body: { id: 'probe' } })).status === 202);
    for (let i = 0; i < 5; i++) expect((await d.call('POST', '/webhooks/hooked/in', { body: { id: `old-${i}` } })).status).toBe(202);
    expect((await d.call('POST', '/webhooks/other/in', { body: { id: 'kept' } })).status).toBe(202);
    const spool = join(state, 'spool', 'hooked');
    expect(existsSync(join(spool, 'hooked%2Fin'))).toBe(true);
    // File-based memory of the same name (what `svc run` or a worker keeps in a state directory).
    const memory = processedFilesPath('hooked', state);
    await new FileProcessedFiles(memory).add('/in/a.csv');
    expect(existsSync(memory)).toBe(true);

    expect((await d.call('DELETE', '/api/pipelines/hooked')).status).toBe(204);
    expect(existsSync(spool)).toBe(false);
    expect(existsSync(memory)).toBe(false);
    // Another pipeline's spool is untouched.
    expect(existsSync(join(state, 'spool', 'other', 'other%2Fin'))).toBe(true);
    await until(() => readNdjson(join(w.root, 'other-out', 'out.ndjson')).some((r) => r.id === 'kept'));

    // The same name, now with a sink that works: only what it receives itself is delivered.
    const out = join(w.root, 'new-out');
    mkdirSync(out);
    await register(d, webhookYaml('hooked', { path: 'hooked/in', outDir: out }));
    await until(async () => (await d.call('POST', '/webhooks/hooked/in', { body: { id: 'fresh' } })).status === 202);
    // A replay of the old spool would be delivered before anything new: 'fresh' alone means none.
    await until(() => readNdjson(join(out, 'out.ndjson')).length > 0);
    expect(readNdjson(join(out, 'out.ndjson'))).toEqual([{ id: 'fresh' }]);
    expect(await new FileProcessedFiles(memory).has('/in/a.csv')).toBe(false);
  });
});
