// `svc dlq list|replay` as a child process against a real daemon: tables and --json, filters, a
// replay with --set and with --patch FILE, the exit status, and errors as `svc: ...` on stderr.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';
import { svc } from '../helpers/cli.js';
import { finishedRun } from '../api/_helpers.js';
import { lines, setUp } from './_local.js';

describe('svc dlq', () => {
  it('lists and replays dead letters of a pipeline of a running daemon', { timeout: 120_000 }, async () => {
    const { d, root: dir } = await setUp();
    const env = { SVC_API_URL: d.url };

    const list = await svc(['dlq', 'list', 'dl'], env);
    expect(list.code, list.stderr).toBe(0);
    const rows = list.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^ID\s+STAGE\s+TIMESTAMP\s+REPLAYED\s+LOCATION\s+ERROR$/);
    expect(rows).toHaveLength(4);
    const json = JSON.parse((await svc(['dlq', 'list', 'dl', '--stage', 'transform', '--json'], env)).stdout);
    expect(json).toHaveLength(1);
    const tId = json[0].id;

    // A fix by expression: exit 0, the run id and its outcome.
    const fixed = await svc(['dlq', 'replay', 'dl', '--id', tId, '--set', 'octets=int(octets)'], env);
    expect(fixed.code, fixed.stderr).toBe(0);
    const runId = /^replay run (\S+): success, 1 records in, 1 out$/m.exec(fixed.stdout)?.[1];
    expect(runId, fixed.stdout).toBeDefined();
    expect(fixed.stdout).toContain('1 replayed, 0 not replayed, 0 replayed before');
    expect(await finishedRun(d, runId!)).toMatchObject({ status: 'success', records_out: 1 });
    expect(lines(join(dir, 'out', 'out.ndjson')).at(-1)).toEqual({ host: 'a', octets: 10, next: 11 });
    expect((await svc(['dlq', 'list', 'dl', '--stage', 'transform'], env)).stdout).toContain(runId!);

    // The sink still refuses: exit 1 and the reason per envelope.
    const refused = await svc(['dlq', 'replay', 'dl', '--stage', 'sink', '--json'], env);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ replayed: [], failed: [{ error: expect.stringContaining('failed again') }] });

    // Replayed already: nothing to do (exit 0); --force with a patch file replays it again.
    const again = await svc(['dlq', 'replay', 'dl', '--id', tId], env);
    expect(again).toMatchObject({ code: 0 });
    expect(again.stdout).toContain('nothing to replay: no run');
    const patch = join(tempDir('svc-dlq-cli-'), 'fix.json');
    writeFileSync(patch, JSON.stringify([{ op: 'replace', path: '/octets', value: 41 }]));
    const forced = await svc(['dlq', 'replay', 'dl', '--id', tId, '--force', '--patch', patch], env);
    expect(forced.code, forced.stdout + forced.stderr).toBe(0);
    expect(lines(join(dir, 'out', 'out.ndjson')).at(-1)).toEqual({ host: 'a', octets: 41, next: 42 });

    const bad = await svc(['dlq', 'replay', 'dl', '--set', 'octets'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^svc: --set 'octets': expected FIELD=EXPRESSION/);
    const unknown = await svc(['dlq', 'list', 'nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^svc: GET \/api\/pipelines\/nope\/dlq: 404 /);
    expect((await svc(['dlq', '--help'], env)).stdout).toMatch(/^Dead letters of a pipeline/);
  });
});
