// `svc top` and `svc tap` (issue 29) against a real daemon running a webhook stream fed known
// records: top shows what GET /api/pipelines says, per pipeline and per stage, as JSON lines, tables
// or a full-screen view; tap prints the records passing a stage and ends at its limit.
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { register, stagedExtra, webhookYaml, workArea } from '../api/_helpers.js';
import { ROOT, svc, svcSpawn, type SvcProcess } from '../helpers/cli.js';
import { testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';

/** A running stream: webhook -> filter (n != 3) -> add_field -> local, with a dead-letter queue. */
async function stream(d: TestDaemon, name: string, headers: Record<string, string> = {}) {
  const w = workArea(0);
  const yaml = webhookYaml(name, {
    path: name,
    outDir: w.outDir,
    extra: stagedExtra(w.outDir),
  });
  expect((await d.call('POST', '/api/pipelines', { yaml, headers })).status).toBe(201);
  await until(async () => (await d.call('GET', `/api/pipelines/${name}`, { headers })).body.active_run_id, 10_000, 'the stream to start');
}

async function feed(d: TestDaemon, name: string, bodies: string[]) {
  for (const body of bodies) expect((await d.call('POST', `/webhooks/${name}`, { body, headers: { 'content-type': 'application/json' } })).status).toBe(202);
}

/** n = 0..5, and one body that does not parse: 7 in, 1 filtered (n 3), 5 written, 1 dead letter. */
const SEVEN = [...Array.from({ length: 6 }, (_, n) => JSON.stringify({ n })), '{"n": 9,'];

async function fedStream(d: TestDaemon, name: string) {
  await stream(d, name);
  await feed(d, name, SEVEN);
  await until(
    async () => {
      const l = (await d.call('GET', `/api/pipelines/${name}`)).body.live;
      return l?.records_in === 7 && l.records_out === 5 && l.stages?.dlq?.records === 1;
    },
    10_000,
    'the stream to count 7 in, 5 out and 1 dead letter',
    100,
  );
}

/** A pipeline that does not run (manual schedule, never triggered). */
async function idle(d: TestDaemon) {
  const w = workArea(0);
  await register(
    d,
    [
      'version: "1"',
      'pipeline:',
      '  name: idle',
      '  schedule: { type: manual }',
      `  source: { type: local, path: ${JSON.stringify(w.inDir)} }`,
      '  serializer_in: { type: ndjson }',
      '  serializer_out: { type: ndjson }',
      `  sinks: [{ type: local, path: ${JSON.stringify(w.outDir)} }]`,
      '',
    ].join('\n'),
  );
}

/** The figures without the rates, which move between two requests. */
function counts(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(counts);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).flatMap(([k, x]) => (k.endsWith('per_sec') ? [] : [[k, counts(x)]])));
  return v;
}

interface Snapshot {
  time: string;
  pipelines: { name: string; status: string; live: any }[];
}
const snapshots = (p: SvcProcess) =>
  p
    .stdout()
    .split('\n')
    .filter((l) => l.endsWith('}'))
    .map((l) => JSON.parse(l) as Snapshot);
const live = (s: Snapshot, name: string) => s.pipelines.find((p) => p.name === name)?.live;

describe('svc top', () => {
  it('--once --json: one JSON line with the figures of GET /api/pipelines, stages included', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    await idle(d);
    await fedStream(d, 'topped');
    const r = await svc(['top', '--once', '--json'], { SVC_API_URL: d.url, SVC_API_KEY: '' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines).toHaveLength(2); // one line, and its newline
    const snap = JSON.parse(lines[0]!) as Snapshot;
    expect(new Date(snap.time).getTime()).toBeGreaterThan(Date.now() - 60_000);
    const api = (await d.call('GET', '/api/pipelines')).body;
    expect(counts(snap.pipelines)).toEqual(counts(api));
    const s = live(snap, 'topped').stages;
    expect(s.transforms.map((t: { label: string }) => t.label)).toEqual(['transforms[0] (filter)', 'transforms[1] (add_field)']);
    expect(s.sinks[0]).toMatchObject({ label: 'sinks[0] (local)', written: 5, circuit: 'closed' });
    expect(s.dlq).toMatchObject({ records: 1 });
    expect(snap.pipelines.find((p) => p.name === 'idle')).toMatchObject({ status: 'stopped', live: null });
  });

  it('--once, piped: a table with a row per pipeline and, under a running one, a row per stage', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    await idle(d);
    await fedStream(d, 'topped');
    const r = await svc(['top', '--once'], { SVC_API_URL: d.url, SVC_API_KEY: '' });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('\x1b'); // no terminal codes in a pipe
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^svc top  ${d.url.replace(/[.]/g, '\\.')}  \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  2 pipelines, 1 running$`));
    expect(lines[1]).toMatch(/^NAME\s+STATUS\s+IN\/S\s+OUT\/S\s+IN\s+OUT\s+FILTERED\s+DLQ\s+ERRORS\s+RETRIES$/);
    const rate = '[\\d.]+';
    const rows = lines.slice(2).filter(Boolean);
    const expected = [
      /^idle\s+stopped\s+-\s+-\s+-\s+-\s+-\s+-\s+-\s+-$/,
      // 7 in, 5 out, 1 filtered, 1 dead letter, 1 error (the body that did not parse), no retries.
      new RegExp(`^topped\\s+running\\s+${rate}\\s+${rate}\\s+7\\s+5\\s+1\\s+1\\s+1\\s+0$`),
      new RegExp(`^  source \\(webhook\\)\\s+${rate}\\s+7\\s+1$`),
      new RegExp(`^  transforms\\[0\\] \\(filter\\)\\s+${rate}\\s+6\\s+5\\s+1\\s+0$`),
      new RegExp(`^  transforms\\[1\\] \\(add_field\\)\\s+${rate}\\s+5\\s+5\\s+0\\s+0$`),
      new RegExp(`^  sinks\\[0\\] \\(local\\)\\s+${rate}\\s+5\\s+5\\s+0\\s+0$`),
      new RegExp(`^  dlq \\(local\\)\\s+${rate}\\s+1\\s+0$`),
    ];
    expect(rows).toHaveLength(expected.length);
    rows.forEach((row, i) => expect(row).toMatch(expected[i]!));
  });

  it('refreshes: a JSON line or a table per refresh, with the new figures; SIGTERM and Ctrl-C end it (exit 0)', { timeout: 90_000 }, async () => {
    const d = await testDaemon();
    await fedStream(d, 'topped');
    const env = { SVC_API_URL: d.url, SVC_API_KEY: '' };
    const json = svcSpawn(['top', '--json', '--interval', '0.2'], env);
    const plain = svcSpawn(['top', '--interval', '0.2'], env);
    await until(() => snapshots(json).length >= 1, 30_000, 'a first snapshot');
    expect(live(snapshots(json)[0]!, 'topped')).toMatchObject({ records_in: 7, records_out: 5 });
    await feed(d, 'topped', [JSON.stringify({ n: 10 }), JSON.stringify({ n: 11 })]);
    const later = await until(() => snapshots(json).find((s) => live(s, 'topped').records_in === 9), 10_000, 'a snapshot with the 2 new records');
    // No more records are fed: what the later refresh shows is what the API says now.
    expect(counts(later.pipelines)).toEqual(counts((await d.call('GET', '/api/pipelines')).body));
    expect(live(later, 'topped').stages.sinks[0].written).toBe(7);
    const times = snapshots(json).map((s) => Date.parse(s.time));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    json.child.kill('SIGTERM');
    expect(await json.exited).toMatchObject({ code: 0, stderr: '' });

    // A table per refresh, with the new records once they are counted.
    const tables = () => plain.stdout().match(/^svc top /gm)?.length ?? 0;
    const written = () => /^ {2}sinks\[0\] \(local\)\s+[\d.]+\s+7\s+7\s+0\s+0$/m.test(plain.stdout());
    await until(() => tables() >= 2 && written(), 30_000, 'two tables, one with the 7 written');
    plain.child.kill('SIGINT');
    expect(await plain.exited).toMatchObject({ code: 0, stderr: '' });
  });

  const hasScript = spawnSync('script', ['--version']).status === 0;
  it.skipIf(!hasScript)(
    'on a terminal: the alternate screen, redrawn in place, a lost daemon said, q quits and gives the terminal back',
    { timeout: 60_000 },
    async () => {
      const d = await testDaemon();
      await fedStream(d, 'topped');
      // `script` gives svc top a pseudo-terminal of 72 columns; what is typed on its stdin is typed there.
      const child = spawn('script', ['-qec', `stty cols 72 rows 30; exec '${process.execPath}' --import tsx src/cli/main.ts top --interval 0.2`, '/dev/null'], {
        cwd: ROOT,
        env: { ...process.env, SVC_API_URL: d.url, SVC_API_KEY: '', NO_COLOR: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
      const exited = new Promise<number | null>((r) => child.on('close', r));
      try {
        // Two frames: the second is drawn over the first, from the top left.
        await until(() => out.split('\x1b[H').length > 2 && out.includes('sinks[0] (local)'), 30_000, 'two frames');
        expect(out).toContain('\x1b[?1049h\x1b[?25l');
        const frame = out.split('\x1b[H').at(-2)!; // the last whole frame
        // eslint-disable-next-line no-control-regex
        const visible = frame.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').split(/\r?\n/);
        for (const l of visible) expect(l.length, l).toBeLessThanOrEqual(72);
        expect(frame).toContain('\x1b[32mrunning\x1b[0m');
        // The daemon goes away: the view stays, and says so.
        await d.stop();
        await until(() => out.split('\x1b[H').at(-2)!.includes('cannot reach the daemon at'), 10_000, 'the view to say the daemon is gone');
        child.stdin.write('q');
        expect(await exited).toBe(0);
        expect(out.endsWith('\x1b[?25h\x1b[?1049l')).toBe(true);
      } finally {
        child.kill('SIGKILL');
      }
    },
  );

  it('says what to do when the daemon cannot be reached or wants a key', { timeout: 60_000 }, async () => {
    const down = await svc(['top', '--once'], { SVC_API_URL: 'http://127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(
      /^svc: cannot reach the daemon at http:\/\/127\.0\.0\.1:1 \(.*\): is `svc serve` running\? Set SVC_API_URL to its address\.\n$/,
    );
    const d = await testDaemon({ SVC_API_KEY: 'k-123456789' });
    const nokey = await svc(['top', '--once'], { SVC_API_URL: d.url, SVC_API_KEY: '' });
    expect(nokey.code).toBe(1);
    expect(nokey.stderr).toMatch(
      /^svc: GET \/api\/pipelines: 401 missing X-API-Key header.* \(SVC_API_KEY is not set in this shell: set it to the daemon's key\)\n$/,
    );
    const keyed = await svc(['top', '--once', '--json'], { SVC_API_URL: d.url, SVC_API_KEY: 'k-123456789' });
    expect(keyed.code).toBe(0);
    expect(JSON.parse(keyed.stdout).pipelines).toEqual([]);
    const bad = await svc(['top', '--interval', '0'], { SVC_API_URL: d.url });
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/^svc: --interval 0: give the seconds between refreshes, from 0\.1 to 3600\nRun 'svc --help' for usage\.\n$/);
  });
});

describe('svc tap', () => {
  it('prints the records passing a stage, filtered and limited, then exits 0; --json is NDJSON alone', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    await stream(d, 'tapped');
    const env = { SVC_API_URL: d.url, SVC_API_KEY: '' };
    const json = svcSpawn(['tap', 'tapped', '--stage', '0', '--filter', 'n >= 2', '--limit', '2', '--json'], env);
    const human = svcSpawn(['tap', 'tapped', '--stage', 'source', '--limit', '1'], env);
    // The first notice comes once the tap is attached: records fed after it are seen.
    await until(() => json.stderr().includes('svc tap: pipeline tapped, stage sinks[0]') && human.stderr().includes('stage source'), 30_000, 'both taps');
    await feed(d, 'tapped', SEVEN);
    const j = await json.exited;
    expect(j.code).toBe(0);
    // The sink's records (after the filter n != 3 and add_field) for which n >= 2, two of them.
    expect(j.stdout).toBe('{"n":2,"seen":"yes"}\n{"n":4,"seen":"yes"}\n');
    expect(j.stderr).toBe(
      'svc tap: pipeline tapped, stage sinks[0]: 10 records/s at most, 2 in all, where n >= 2 (Ctrl-C stops)\nsvc tap: ended: limit of 2 records reached\n',
    );
    const h = await human.exited;
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/^\d\d:\d\d:\d\d\.\d{3} source \{"n":0\}\n$/);
  });

  it('waits for a pipeline that is not running, says when it runs, and closes on Ctrl-C (exit 0)', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    const w = workArea(0);
    await register(d, webhookYaml('later', { path: 'later', outDir: w.outDir, extra: ['enabled: false'] }));
    const t = svcSpawn(['tap', 'later', '--stage', 'source', '--json'], { SVC_API_URL: d.url, SVC_API_KEY: '' });
    await until(() => t.stderr().includes('svc tap: waiting: pipeline later is not running'), 30_000, 'the waiting notice');
    expect((await d.call('POST', '/api/pipelines/later/start')).status).toBe(200);
    await until(() => t.stderr().includes('svc tap: pipeline later is running'), 10_000, 'the running notice');
    await feed(d, 'later', ['{"a": 1}']);
    await until(() => t.stdout() === '{"a":1}\n', 10_000, 'the record');
    t.child.kill('SIGINT');
    const r = await t.exited;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('{"a":1}\n');
  });

  it('prints the daemon’s {detail} and exits 1 when the tap is refused', { timeout: 60_000 }, async () => {
    const d = await testDaemon();
    await stream(d, 'tapped');
    const env = { SVC_API_URL: d.url, SVC_API_KEY: '' };
    const [stage, pipeline, limit] = await Promise.all([
      svc(['tap', 'tapped', '--stage', 'kafka'], env),
      svc(['tap', 'nope'], env),
      svc(['tap', 'tapped', '--limit', '0'], env),
    ]);
    expect(stage).toEqual({
      code: 1,
      stdout: '',
      stderr: "svc: GET /api/pipelines/tapped/tap: 400 unknown stage 'kafka': use source, transforms, dlq or a sink: 0 (local)\n",
    });
    expect(pipeline).toEqual({ code: 1, stdout: '', stderr: "svc: GET /api/pipelines/nope/tap: 404 pipeline 'nope' not found\n" });
    expect(limit.code).toBe(1);
    expect(limit.stderr).toMatch(/^svc: GET \/api\/pipelines\/tapped\/tap: 422 .*limit/);
    const down = await svc(['tap', 'tapped'], { SVC_API_URL: 'http://127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^svc: cannot reach the daemon at http:\/\/127\.0\.0\.1:1 \(.*ECONNREFUSED.*\): is `svc serve` running\?/);
    const missing = await svc(['tap'], env);
    expect(missing.code).toBe(64);
    expect(missing.stderr).toMatch(/^svc: tap: missing pipeline NAME \(svc tap --help\)\n/);
  });

  it('sends SVC_API_KEY; without it, says which variable to set', { timeout: 60_000 }, async () => {
    const key = 'k-123456789';
    const d = await testDaemon({ SVC_API_KEY: key });
    await stream(d, 'guarded', { 'x-api-key': key });
    const nokey = await svc(['tap', 'guarded'], { SVC_API_URL: d.url, SVC_API_KEY: '' });
    expect(nokey.code).toBe(1);
    expect(nokey.stderr).toMatch(
      /^svc: GET \/api\/pipelines\/guarded\/tap: 401 missing X-API-Key header.* \(SVC_API_KEY is not set in this shell: set it to the daemon's key\)\n$/,
    );
    const keyed = svcSpawn(['tap', 'guarded'], { SVC_API_URL: d.url, SVC_API_KEY: key });
    await until(() => keyed.stderr().includes('svc tap: pipeline guarded, stage transforms'), 30_000, 'the tap');
    keyed.child.kill('SIGTERM');
    expect((await keyed.exited).code).toBe(0);
  });
});
