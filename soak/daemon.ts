// The daemon under soak: `svc serve` as a child process (built JS, or the sources through tsx), on
// free loopback ports, its SQLite store, state and MIB folders in the run's directory, its output
// into the log file given. Stopped by its PID (SIGTERM, SIGKILL after the drain time).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../test/helpers/net.js';
import { serveEnv } from '../test/helpers/serve-env.js';
import { ROOT } from './peers.js';

export interface SoakDaemon {
  url: string;
  pid: number;
  pipelineDir: string;
  /** Why it exited, when it did before stop(). */
  exited(): string | undefined;
  stop(): Promise<void>;
}

/** Creates the folders and picks the ports; start() then runs it with the pipelines written meanwhile. */
export async function prepareDaemon(dir: string, how: 'dist' | 'tsx', logFile: string) {
  const pipelineDir = join(dir, 'pipelines');
  mkdirSync(pipelineDir, { recursive: true });
  const main = how === 'dist' ? join(ROOT, 'dist', 'cli', 'main.js') : join(ROOT, 'src', 'cli', 'main.ts');
  if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (or --daemon tsx)`);
  const [port, consolePort] = [await freePort(), await freePort()];
  return {
    pipelineDir,
    async start(): Promise<SoakDaemon> {
      const log = openSync(logFile, 'a');
      const args = how === 'dist' ? [main, 'serve'] : ['--import', 'tsx', main, 'serve'];
      const child: ChildProcess = spawn(process.execPath, args, {
        cwd: ROOT,
        env: { ...process.env, ...serveEnv(dir, { port, consolePort }, { SVC_NODE_ID: 'soak', SVC_LOG_LEVEL: 'WARNING', SVC_SHUTDOWN_TIMEOUT_SECONDS: '30' }) },
        stdio: ['ignore', log, log],
      });
      closeSync(log);
      let exit: string | undefined;
      child.once('exit', (code, signal) => (exit = `svc serve exited (${signal ?? code}); see ${logFile}`));
      const url = `http://127.0.0.1:${port}`;
      const end = Date.now() + 60_000;
      while (
        (await fetch(`${url}/api/health`).then(
          (r) => r.status,
          () => 0,
        )) !== 200
      ) {
        if (exit) throw new Error(exit);
        if (Date.now() > end) {
          child.kill('SIGKILL');
          throw new Error(`svc serve did not answer /api/health within 60 s; see ${logFile}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      return {
        url,
        pid: child.pid!,
        pipelineDir,
        exited: () => exit,
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const done = once(child, 'exit');
          process.kill(child.pid!, 'SIGTERM');
          const t = setTimeout(() => process.kill(child.pid!, 'SIGKILL'), 40_000);
          await done;
          clearTimeout(t);
        },
      };
    },
  };
}
