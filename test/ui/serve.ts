// A real `svc serve` (daemon and console) on loopback for the browser tests, shared by the tests of
// one file: test/helpers/daemon.ts's serveChild kills its child after each test, these live until stop().
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_WITH_PARENT, freePort } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { serveEnv } from '../helpers/serve-env.js';
import { ROOT } from './ui-build.js';

export interface Served {
  url: string;
  consoleUrl: string;
  /** A folder of this daemon's own (database, pipelines, MIBs), removed by stop(); tests may add to it. */
  dir: string;
  stop(): Promise<void>;
}

export async function serve(env: Record<string, string>): Promise<Served> {
  const [port, consolePort] = [await freePort(), await freePort()];
  // Not test/helpers/fs.ts's tempDir: that one is removed after each test, this one outlives them.
  const dir = mkdtempSync(join(tmpdir(), 'svc-ui-e2e-'));
  mkdirSync(join(dir, 'pipelines'));
  const child = spawn(process.execPath, [...EXIT_WITH_PARENT, '--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env: { ...process.env, ...serveEnv(dir, { port, consolePort }, { SVC_NODE_ID: 'ui-test', SVC_LOG_LEVEL: 'ERROR', ...env }) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const consoleUrl = `http://127.0.0.1:${consolePort}`;
  const up = async (u: string) => (await fetch(`${u}/api/health`).catch(() => undefined))?.status === 200;
  await until(async () => (await up(url)) && (await up(consoleUrl)), 30_000, 'the daemon and the console to answer /api/health', 100).catch((e: Error) => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${e.message}; svc serve stderr: ${stderr}`);
  });
  return {
    url,
    consoleUrl,
    dir,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
