// The `svc` command as a child process: run to completion (the CLI tests of every command), or left running (svc top, svc tap).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface SvcResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc ...args` (from this checkout's sources) with `env` added to this process's environment. */
export function svc(args: string[], env: Record<string, string> = {}): Promise<SvcResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface SvcProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited (its output read to the end). */
  exited: Promise<SvcResult>;
}

const spawned: ChildProcess[] = [];
afterEach(() => {
  for (const c of spawned.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/**
 * `svc ...args` left running (svc top, svc tap): the test reads its output as it comes, signals it,
 * and awaits `exited`. Killed after the test if it is still running.
 */
export function svcSpawn(args: string[], env: Record<string, string> = {}): SvcProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<SvcResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}
