import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_WITH_PARENT } from './daemon.js';
import { tempDir } from './fs.js';
import { until } from './wait.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a daemon started by a test that dies first', () => {
  it('stops as on SIGTERM once its parent is gone', async () => {
    const dir = tempDir('svc-orphan-');
    // The "daemon": records that it got SIGTERM, then exits; it would otherwise run forever.
    const daemon = `process.on('SIGTERM', () => { require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'stopped'))}, 'SIGTERM'); process.exit(0); }); require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'started'))}, ''); setInterval(() => {}, 1000);`;
    // The "test process": starts the daemon with the preload, prints its PID, and is killed -9.
    const testProcess = `const c = require('node:child_process').spawn(process.execPath, ${JSON.stringify([...EXIT_WITH_PARENT, '-e', daemon])}, { stdio: 'ignore' }); console.log(c.pid); setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', testProcess], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (b: Buffer) => resolve(Number(b.toString().trim()))));
    // Started (its preload has seen its first parent) before that parent dies.
    await until(() => existsSync(join(dir, 'started')), 15_000, 'the daemon to start');
    expect(alive(pid)).toBe(true);
    parent.kill('SIGKILL');
    await until(() => existsSync(join(dir, 'stopped')), 15_000, 'the orphaned daemon to get SIGTERM');
    expect(readFileSync(join(dir, 'stopped'), 'utf8')).toBe('SIGTERM');
    // Gone, or a zombie waiting for a PID 1 that does not reap (containers).
    await until(() => !alive(pid) || /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')), 5_000, 'the orphaned daemon to exit');
  });
});
