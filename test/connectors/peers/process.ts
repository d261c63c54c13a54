// A peer server run as a child process of the test (nats-server, redis-server...): started on a
// given loopback port, ready once it accepts TCP connections, killed by its PID, and started again
// on the same port for restart cases.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { until } from '../../helpers/wait.js';

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });

export interface PeerProcess {
  /** Starts it; resolves once `port` accepts connections (fails with the process's last output). */
  start(): Promise<void>;
  /** SIGKILL, and waits for the exit. */
  kill(): Promise<void>;
  pid(): number;
}

/**
 * `detached`: started in a process group of its own, and kill() SIGKILLs the whole group (a server
 * that forks per session). `name`: how errors name it (default: `command`).
 */
export function peerProcess(command: string, args: string[], port: number, opts: { detached?: boolean; name?: string } = {}): PeerProcess {
  let child: ChildProcess | undefined;
  let log = '';
  const name = opts.name ?? command;
  return {
    async start() {
      const c = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false });
      child = c;
      for (const s of [c.stdout!, c.stderr!]) s.setEncoding('utf8').on('data', (t: string) => (log = (log + t).slice(-4000)));
      const listening = await until(async () => (await portOpen(port)) || c.exitCode !== null, 15_000, `${name} to listen on ${port}`, 30).catch(() => false);
      if (c.exitCode !== null) throw new Error(`${name} exited (${c.exitCode}): ${log}`);
      if (!listening) throw new Error(`${name} did not listen on ${port}: ${log}`);
    },
    async kill() {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = once(c, 'exit');
      if (opts.detached) {
        try {
          process.kill(-c.pid!, 'SIGKILL'); // the process and everything it forked
        } catch {
          c.kill('SIGKILL');
        }
      } else c.kill('SIGKILL');
      await exited;
    },
    pid: () => child?.pid ?? -1,
  };
}
