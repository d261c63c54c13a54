// A real daemon for API tests: port 0 on loopback, a temporary SQLite file (or SVC_DB_URL), a
// temporary pipeline directory. `call` is a small fetch wrapper that returns status, headers, body.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import { loadSettings } from '../../src/settings.js';
import { tempDir } from './fs.js';
import { freePort } from './net.js';
import { until } from './wait.js';

/** A loopback port that was free a moment ago (test/helpers/net.ts). */
export { freePort };

const running: Daemon[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) await d.stop().catch(() => {});
});

export interface TestDaemon extends Daemon {
  dir: string;
  call(
    method: string,
    path: string,
    opts?: { body?: unknown; yaml?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; headers: Headers; body: any; text: string }>;
}

export async function testDaemon(env: Record<string, string> = {}, opts: { dir?: string; log?: Logger } = {}): Promise<TestDaemon> {
  const dir = opts.dir ?? tempDir('svc-daemon-');
  mkdirSync(join(dir, 'pipelines'), { recursive: true });
  const settings = loadSettings({
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_DB_PATH: join(dir, 'svc.db'),
    SVC_PIPELINE_DIR: join(dir, 'pipelines'),
    SVC_SHUTDOWN_TIMEOUT_SECONDS: '5',
    SVC_NODE_ID: 'test-node',
    ...testMibEnv(dir),
    ...env,
  });
  const d = await startDaemon({ settings, log: opts.log ?? silentLogger });
  running.push(d);
  const call: TestDaemon['call'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    let body: string | undefined;
    if (o.yaml !== undefined) {
      headers['content-type'] ??= 'application/yaml';
      body = o.yaml;
    } else if (o.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    }
    const res = await fetch(d.url + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  return Object.assign(d, { dir, call });
}

/** MIB store folders inside a test's directory (never the machine's /mibs), no bundled dirs but the product's own. */
export function testMibEnv(dir: string): Record<string, string> {
  return { SVC_MIB_DIR: join(dir, 'mibs'), SVC_MIB_SOURCE_DIR: join(dir, 'mib-sources'), SVC_MIB_BUNDLED_SOURCE_DIR: '' };
}

/** Node options that make a test's daemon stop when the test process dies first (see the file). */
export const EXIT_WITH_PARENT = ['--import', fileURLToPath(new URL('./exit-with-parent.mjs', import.meta.url))];

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/**
 * The real `svc serve` as a child process (for kill -9 tests), answering /api/health (a worker:
 * `ready: '/agent/health'` on its SVC_WORKER_PORT, given as `port`) when this resolves. Killed
 * after the test if still running, unless `keep` (then the caller kills it: processes shared by
 * several tests).
 */
export async function serveChild(
  env: Record<string, string>,
  opts: {
    port?: number;
    ready?: string;
    keep?: boolean;
    host?: string;
    prefix?: string[] /** How long the start may take (default 20 s). */;
    readyMs?: number;
  } = {},
) {
  const port = opts.port ?? (await freePort());
  const url = `http://${opts.host ?? '127.0.0.1'}:${port}`;
  const root = fileURLToPath(new URL('../../', import.meta.url));
  // `prefix`: a command that execs the daemon (`ip netns exec NS`), so the PID is still the daemon's.
  const [command, ...args] = [...(opts.prefix ?? []), process.execPath, ...EXIT_WITH_PARENT, '--import', 'tsx', 'src/cli/main.ts', 'serve'];
  const child = spawn(command!, args, {
    cwd: root,
    env: {
      ...process.env,
      SVC_HOST: '127.0.0.1',
      SVC_PORT: String(port),
      SVC_CONSOLE_PORT: '0',
      SVC_NODE_ID: 'test-node',
      SVC_LOG_LEVEL: 'ERROR',
      ...testMibEnv(tempDir('svc-mibs-')),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (!opts.keep) children.push(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
  const ready = opts.ready ?? '/api/health';
  await until(async () => (await fetch(url + ready).catch(() => undefined))?.status === 200, opts.readyMs ?? 20_000, `${url}${ready} to answer 200`, 100).catch(
    (e: Error) => {
      throw new Error(`${e.message}; svc serve stderr: ${stderr}`);
    },
  );
  return { url, child, exited, stderr: () => stderr };
}
