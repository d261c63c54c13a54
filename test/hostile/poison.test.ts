// Poison inputs (issue 28): an input that stopped the process while it was being processed is not
// processed again when its delivery path hands it back (a spooled webhook body, a file of a file
// source): it goes to the DLQ with the reason, and the daemon comes up and serves its API.
// The watch that notes suspects is src/engine/decode-watch.ts.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveChild } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { serveEnv } from '../helpers/serve-env.js';
import { rabbitVhost } from '../connectors/peers/rabbitmq.js';
import { loadPipelineText } from '../../src/config/load.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline } from '../../src/engine/runner.js';

interface Envelope {
  _error: string;
  _stage: string;
  _raw: string | null;
}

/** The complete lines of an NDJSON file (one still being written counts as not there yet). */
function readLines(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  } catch {
    return [];
  }
}

/** A JSON array that takes the json decoder a good fraction of a second on any machine here. */
function slowJson(records: number) {
  const parts: string[] = [];
  for (let i = 0; i < records; i++) parts.push(`{"i":${i},"name":"interface-${i}","pad":"${'x'.repeat(40)}"}`);
  return `[${parts.join(',')}]`;
}

/**
 * A pipeline with `on_error: dlq` from `source` (a YAML flow mapping) through the json decoder into
 * `<dir>/out/out.ndjson`, its dead letters in `<dir>/dlq/dlq.ndjson`.
 */
function pipelineYaml(name: string, dir: string, source: string, stream = false) {
  return `version: "1"
pipeline:
  name: ${name}
  schedule: { type: ${stream ? 'stream' : 'manual'} }
${stream ? '' : '  skip_processed: true\n'}  on_error: dlq
  source: ${source}
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(join(dir, 'out'))}, filename_template: "out.ndjson" }
  dlq: { type: local, path: ${JSON.stringify(join(dir, 'dlq'))}, filename_template: "dlq.ndjson" }
`;
}

/** Names what a wait was for when it runs out. */
const why = (what: string) => (e: Error) => {
  throw new Error(`${what}: ${e.message}`);
};

const rawOf = (e: Record<string, unknown>) => Buffer.from(String(e._raw ?? e.raw ?? ''), 'base64');

function svcRun(file: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'run', file], {
      cwd: ROOT,
      env: { ...process.env, SVC_LOG_LEVEL: 'ERROR', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('poison inputs are set aside, not replayed into a crash loop', () => {
  it('a deeply nested input file is dead-lettered and remembered as processed, not retried at every run', async () => {
    const dir = tempDir('svc-poison-deep-');
    const inDir = join(dir, 'in');
    mkdirSync(inDir);
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    writeFileSync(join(inDir, 'deep.json'), deep);
    const { config } = loadPipelineText(pipelineYaml('deep', dir, `{ type: local, path: ${JSON.stringify(inDir)}, file_pattern: "*.json" }`));
    const processed = new MemoryProcessedFiles();
    const first = await runPipeline(config!, { processed });
    expect(first).toMatchObject({ status: 'success', records_in: 1, dlq_count: 1 });
    const [dead] = readLines(join(dir, 'dlq', 'dlq.ndjson'));
    expect(String(dead!._error)).toMatch(/nested deeper than 512/);
    const second = await runPipeline(config!, { processed });
    expect(second).toMatchObject({ status: 'success', records_in: 0 });
  });

  it('a file whose processing outlasts SVC_DECODE_TIMEOUT_MS ends the run; the next run dead-letters it as timed out', async () => {
    const dir = tempDir('svc-poison-file-');
    const inDir = join(dir, 'in');
    mkdirSync(inDir);
    const body = slowJson(400_000);
    writeFileSync(join(inDir, 'big.json'), body);
    writeFileSync(join(inDir, 'small.json'), '[{"i":1}]');
    const pipeline = join(dir, 'p.yaml');
    writeFileSync(pipeline, pipelineYaml('poison-file', dir, `{ type: local, path: ${JSON.stringify(inDir)}, file_pattern: "*.json" }`));
    const env = { SVC_STATE_DIR: join(dir, 'state'), SVC_DECODE_WATCH_MS: '20', SVC_DECODE_TIMEOUT_MS: '150' };
    const first = await svcRun(pipeline, env);
    expect(first.signal, first.stderr).toBe('SIGKILL');
    expect(first.stderr).toMatch(/big\.json.*SVC_DECODE_TIMEOUT_MS/);
    const notes = readdirSync(join(dir, 'state', 'quarantine', 'poison-file'));
    expect(notes).toHaveLength(1);

    // The next run, with a timeout the file would have met: it is not processed again.
    const second = await svcRun(pipeline, { ...env, SVC_DECODE_TIMEOUT_MS: '600000' });
    expect(second.code, second.stderr).toBe(0);
    const record = JSON.parse(second.stdout) as { status: string; dlq_count: number; records_out: number };
    expect(record.status).toBe('success');
    expect(record.dlq_count).toBe(1);
    const [dead] = readLines(join(dir, 'dlq', 'dlq.ndjson')) as unknown as Envelope[];
    expect(dead!._stage).toBe('parse');
    expect(dead!._error).toMatch(/^timed out: /);
    expect(rawOf(dead as unknown as Record<string, unknown>).toString()).toBe(body);
    // The other file went through, and the note is gone once the input is dead-lettered.
    expect(readLines(join(dir, 'out', 'out.ndjson'))).toEqual([{ i: 1 }]);
    expect(readdirSync(join(dir, 'state', 'quarantine', 'poison-file'))).toEqual([]);
    // Remembered as processed: a third run reads nothing.
    const third = await svcRun(pipeline, env);
    expect(JSON.parse(third.stdout)).toMatchObject({ status: 'success', records_in: 0 });
  }, 120_000);

  it('kill -9 while a spooled webhook body is being decoded: the daemon comes back with a clean API and the body in the DLQ', async () => {
    const dir = tempDir('svc-poison-hook-');
    const out = join(dir, 'out');
    const yaml = pipelineYaml('poison-hook', dir, '{ type: webhook, path: alarms }', true);
    mkdirSync(join(dir, 'pipelines'));
    writeFileSync(join(dir, 'pipelines', 'poison-hook.yaml'), yaml);
    const env = {
      SVC_DB_PATH: join(dir, 'svc.db'),
      SVC_STATE_DIR: join(dir, 'state'),
      SVC_PIPELINE_DIR: join(dir, 'pipelines'),
      SVC_WEBHOOK_MAX_BODY_BYTES: String(200 << 20),
      SVC_DECODE_WATCH_MS: '20',
    };
    const first = await serveChild(env);
    const post = (url: string, body: string) => fetch(`${url}/webhooks/alarms`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    await until(async () => (await post(first.url, '{"id":"before"}')).status === 202);
    await until(() => readLines(join(out, 'out.ndjson')).length === 1);
    // Big enough that decoding it takes far longer than the watch's 20 ms: the note appears while it runs.
    const body = slowJson(600_000);
    expect((await post(first.url, body)).status).toBe(202);
    const notes = join(dir, 'state', 'quarantine', 'poison-hook');
    await until(() => existsSync(notes) && readdirSync(notes).length === 1, 30_000, 'a quarantine note of the body', 5).catch(
      why('no note of the body in work'),
    );
    first.child.kill('SIGKILL');
    await first.exited;
    // Dead, so its note stays (had the processing ended before the kill, the note would be gone).
    expect(readdirSync(notes)).toHaveLength(1);

    const second = await serveChild(env);
    expect((await fetch(`${second.url}/api/health`)).status).toBe(200);
    const dlq = join(dir, 'dlq', 'dlq.ndjson');
    await until(() => readLines(dlq).length === 1, 60_000).catch(why(`no DLQ entry after the restart; stderr: ${second.stderr().slice(-2000)}`));
    const [dead] = readLines(dlq);
    expect(dead!._stage).toBe('parse');
    expect(String(dead!._error)).toMatch(/^crashed the decoder: /);
    expect(rawOf(dead!).toString()).toBe(body);
    // The stream goes on: a later body is delivered, and the note is gone.
    expect((await post(second.url, '{"id":"after"}')).status).toBe(202);
    await until(() => readLines(join(out, 'out.ndjson')).some((r) => r.id === 'after'), 30_000).catch(
      why('the body posted after the restart was not delivered'),
    );
    await until(() => readdirSync(notes).length === 0).catch(why('the note was not removed'));
    const state = (await (await fetch(`${second.url}/api/pipelines/poison-hook`)).json()) as { status: string };
    expect(state.status).toBe('running');
  }, 120_000);

  it('kill -9 while a RabbitMQ message is being decoded: the broker redelivers it, and the restarted daemon dead-letters it and acknowledges it', async () => {
    const rabbit = await rabbitVhost();
    try {
      const dir = tempDir('svc-poison-amqp-');
      const out = join(dir, 'out');
      mkdirSync(join(dir, 'pipelines'));
      writeFileSync(
        join(dir, 'pipelines', 'poison-amqp.yaml'),
        pipelineYaml('poison-amqp', dir, `{ type: amqp, url: ${JSON.stringify(rabbit.url)}, queue: alarms }`, true),
      );
      const env = { SVC_DB_PATH: join(dir, 'svc.db'), SVC_STATE_DIR: join(dir, 'state'), SVC_PIPELINE_DIR: join(dir, 'pipelines'), SVC_DECODE_WATCH_MS: '20' };
      const ch = await rabbit.admin.createConfirmChannel();
      await ch.assertQueue('alarms', { durable: true });
      const publish = async (body: string) => {
        ch.sendToQueue('alarms', Buffer.from(body), { persistent: true });
        await ch.waitForConfirms();
      };
      const first = await serveChild(env);
      await publish('{"id":"before"}');
      await until(() => readLines(join(out, 'out.ndjson')).length === 1, 30_000);
      const body = slowJson(600_000);
      await publish(body);
      const notes = join(dir, 'state', 'quarantine', 'poison-amqp');
      await until(() => existsSync(notes) && readdirSync(notes).length === 1, 30_000, 'a quarantine note of the message', 5);
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await serveChild(env);
      const dlq = join(dir, 'dlq', 'dlq.ndjson');
      await until(() => readLines(dlq).length === 1, 30_000);
      const [dead] = readLines(dlq);
      expect(String(dead!._error)).toMatch(/^crashed the decoder: /);
      expect(rawOf(dead!).toString()).toBe(body);
      await publish('{"id":"after"}');
      await until(() => readLines(join(out, 'out.ndjson')).some((r) => r.id === 'after'), 30_000);
      // Acknowledged: nothing of it is left on the queue.
      await until(async () => (await ch.checkQueue('alarms')).messageCount === 0, 10_000);
      expect((await fetch(`${second.url}/api/health`)).status).toBe(200);
      await ch.close();
    } finally {
      await rabbit.stop();
    }
  }, 120_000);

  it('kill -9 while a MIB source is being compiled at start: the next start sets it aside and serves; a fixed file compiles again', async () => {
    // A module big enough that compiling it takes well over the watch's 20 ms (within every limit).
    const lines = ['BIG-MIB DEFINITIONS ::= BEGIN', 'IMPORTS enterprises FROM SNMPv2-SMI;', 'big OBJECT IDENTIFIER ::= { enterprises 4343 }'];
    for (let i = 1; i <= 19_000; i++) lines.push(`b${i} OBJECT IDENTIFIER ::= { big ${i} }`);
    const text = [...lines, 'END', ''].join('\n');
    /** A start killed while it compiles BIG-MIB (before its API listens: no serveChild here): its folders and environment. */
    const killedWhileCompiling = async () => {
      const dir = tempDir('svc-poison-mib-');
      const sources = join(dir, 'mib-sources', 'common');
      mkdirSync(sources, { recursive: true });
      writeFileSync(join(sources, 'BIG-MIB.txt'), text);
      // The folders of serveEnv; the API port is serveChild's (or any, for the first start).
      const env: Record<string, string> = serveEnv(dir, { port: 0, consolePort: 0 }, { SVC_DECODE_WATCH_MS: '20', SVC_LOG_LEVEL: 'ERROR' });
      delete env.SVC_PORT;
      mkdirSync(join(dir, 'pipelines'));
      const first = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
        cwd: ROOT,
        env: { ...process.env, ...env, SVC_PORT: '0' },
        stdio: 'ignore',
      });
      const notes = join(dir, 'state', 'quarantine', 'mib-sources');
      // The watch's note while BIG-MIB is in work (it names the source; other modules compile too).
      const bigInWork = () => {
        try {
          return readdirSync(notes).some((n) => readFileSync(join(notes, n), 'utf8').includes('BIG-MIB.txt'));
        } catch {
          return false; // no folder yet, or a note being replaced
        }
      };
      const exited = new Promise((r) => first.on('exit', r));
      await until(bigInWork, 60_000, 'a quarantine note of the MIB source', 2).catch(why('no note of the MIB source in work'));
      first.kill('SIGKILL');
      await exited;
      return { env, notes, caught: bigInWork() };
    };
    // BIG-MIB is in work for about 100 ms: a kill that comes after its compile (a loaded machine)
    // leaves no note of it, and another start is killed.
    let start = await killedWhileCompiling();
    for (let attempt = 2; attempt <= 6 && !start.caught; attempt++) start = await killedWhileCompiling();
    expect(start.caught, 'six starts got past compiling BIG-MIB before their kill').toBe(true);
    const { env, notes } = start;
    const sources = join(env.SVC_MIB_SOURCE_DIR!, 'common');

    const names = async (url: string) => ((await (await fetch(`${url}/api/mibs`)).json()) as { name: string }[]).map((m) => m.name);
    const second = await serveChild(env);
    expect(await names(second.url)).toContain('SNMPv2-SMI');
    expect(await names(second.url)).not.toContain('BIG-MIB');
    expect(readdirSync(notes)).toHaveLength(1);
    second.child.kill('SIGKILL');
    await second.exited;

    // Replaced (here: the same module with a comment): compiled again, and the note is forgotten.
    writeFileSync(join(sources, 'BIG-MIB.txt'), `-- fixed\n${text}`);
    const third = await serveChild(env);
    expect(await names(third.url)).toContain('BIG-MIB');
    expect(readdirSync(notes)).toEqual([]);
  }, 180_000);
});
