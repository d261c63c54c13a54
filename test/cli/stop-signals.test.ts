// SIGTERM at any moment of the start (issue 36): `svc serve` (standalone and worker) and
// `svc console` stop in order and exit 0, leaving no port open. The start is held at a named point
// (SVC_TEST_HOLD_START) until the signal arrives, so each moment is hit every time, not by luck.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { freePort } from '../helpers/net.js';
import { serveEnv } from '../helpers/serve-env.js';
import { until } from '../helpers/wait.js';

interface Child {
  pid: number;
  stderr(): string;
  stdout(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running(): boolean;
  kill(sig: NodeJS.Signals): void;
}

const started: Child[] = [];
afterEach(() => {
  for (const c of started.splice(0)) c.kill('SIGKILL');
});

function svc(command: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...command], {
    cwd: ROOT,
    env: { ...process.env, SVC_LOG_LEVEL: 'INFO', SVC_LOG_FORMAT: 'json', SVC_NODE_ID: 'test-node', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s));
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('exit', (code, signal) => {
      running = false;
      r({ code, signal });
    }),
  );
  const c: Child = { pid: child.pid!, stderr: () => err, stdout: () => out, exited, running: () => running, kill: (sig) => running && child.kill(sig) };
  started.push(c);
  return c;
}

/** True when nothing listens on the port any more (binding it succeeds). */
const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

const status = (url: string) =>
  fetch(url).then(
    (r) => r.status,
    () => 0,
  );

/** Starts `svc serve` held at `point`, waits until it is held there, and returns it with its ports. */
async function heldServe(point: string, extra: Record<string, string> = {}) {
  const dir = tempDir('svc-signals-');
  mkdirSync(join(dir, 'pipelines'));
  const ports = { port: await freePort(), consolePort: await freePort() };
  const child = svc(['serve'], { ...serveEnv(dir, ports), SVC_TEST_HOLD_START: point, ...extra });
  await until(() => child.stderr().includes(`start held at ${point}`) || !child.running(), 30_000);
  if (!child.running()) throw new Error(`never held at ${point}; stderr: ${child.stderr()}`);
  return { dir, child, ports, api: `http://127.0.0.1:${ports.port}` };
}

async function expectCleanStop(child: Child, ports: number[]) {
  expect(child.running(), `exited before the signal; stderr: ${child.stderr()}`).toBe(true);
  child.kill('SIGTERM');
  const exit = await child.exited;
  expect(exit, `stderr: ${child.stderr()}`).toEqual({ code: 0, signal: null });
  for (const p of ports) expect(await portFree(p), `port ${p} still taken`).toBe(true);
}

describe('svc serve obeys SIGTERM from its first moment', () => {
  it('before the pipelines start: exits 0, the API never listened', async () => {
    const { child, ports, api } = await heldServe('before-pipelines');
    expect(await status(`${api}/api/health`)).toBe(0);
    await expectCleanStop(child, [ports.port, ports.consolePort]);
    expect(child.stderr()).toContain('"msg":"stopped"');
  });

  it('after the pipelines started, before the API listens: the stream started is stopped, exit 0', async () => {
    const dir = tempDir('svc-signals-pipes-');
    const webhookPipeline = `version: "1"
pipeline:
  name: hook
  schedule: { type: stream }
  source: { type: webhook, path: hook }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(join(dir, 'out'))}, filename_template: out.ndjson }
`;
    const pipelines = join(dir, 'p');
    mkdirSync(pipelines);
    writeFileSync(join(pipelines, 'hook.yaml'), webhookPipeline);
    const { child, ports, api } = await heldServe('before-listen', { SVC_PIPELINE_DIR: pipelines });
    expect(await status(`${api}/api/health`)).toBe(0);
    await expectCleanStop(child, [ports.port, ports.consolePort]);
    // The stream was running and was stopped by the drain, not cut off.
    expect(child.stderr()).toContain('shutting down: draining runs');
    expect(child.stderr()).toContain('"msg":"stopped"');
  });

  it('between the API and the console: /api/ready answers 503 until the console is up, and a signal then exits 0', async () => {
    const { child, ports, api } = await heldServe('before-console');
    expect(await status(`${api}/api/health`)).toBe(200);
    const ready = await fetch(`${api}/api/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { scheduler: string }).scheduler).toBe('starting');
    await expectCleanStop(child, [ports.port, ports.consolePort]);
  });

  it('just after /api/ready first answers 200: the console answers too, and the signal drains and exits 0', async () => {
    const dir = tempDir('svc-signals-ready-');
    mkdirSync(join(dir, 'pipelines'));
    const ports = { port: await freePort(), consolePort: await freePort() };
    const child = svc(['serve'], serveEnv(dir, ports));
    const api = `http://127.0.0.1:${ports.port}`;
    // Poll as fast as a probe can: the signal goes the moment ready says 200.
    await until(async () => (await status(`${api}/api/ready`)) === 200, 30_000);
    child.kill('SIGTERM');
    // Ready meant the console was up as well (it may already be closing by now, so this was
    // checked from its log line: it listened before ready).
    const exit = await child.exited;
    expect(exit, `stderr: ${child.stderr()}`).toEqual({ code: 0, signal: null });
    expect(child.stderr()).toContain('svc console listening');
    expect(child.stderr()).toContain('signal received');
    for (const p of [ports.port, ports.consolePort]) expect(await portFree(p)).toBe(true);
  });

  it('svc console: a signal right after it listens exits 0 and frees the port', async () => {
    const dir = tempDir('svc-signals-console-');
    const ports = { port: await freePort(), consolePort: await freePort() };
    const child = svc(['console'], { ...serveEnv(dir, ports), SVC_TEST_HOLD_START: 'console-listening' });
    await until(() => child.stderr().includes('start held at console-listening'), 30_000);
    expect(await status(`http://127.0.0.1:${ports.consolePort}/api/meta`)).not.toBe(0);
    await expectCleanStop(child, [ports.consolePort]);
  });

  it('svc serve in worker mode: a signal right after the agent listens exits 0 and frees its ports', async () => {
    const dir = tempDir('svc-signals-worker-');
    const agent = await freePort();
    const ingress = await freePort();
    const child = svc(['serve'], {
      SVC_MODE: 'worker',
      SVC_HOST: '127.0.0.1',
      SVC_WORKER_PORT: String(agent),
      SVC_WORKER_INGRESS_PORT: String(ingress),
      SVC_DATA_DIR: dir,
      SVC_MANAGER_URL: '',
      SVC_TEST_HOLD_START: 'worker-listening',
    });
    await until(() => child.stderr().includes('start held at worker-listening') || !child.running(), 30_000);
    if (!child.running()) throw new Error(`never held; stderr: ${child.stderr()}`);
    expect(await status(`http://127.0.0.1:${agent}/agent/health`)).toBe(200);
    await expectCleanStop(child, [agent, ingress]);
  });
});
