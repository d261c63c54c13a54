// One daemon per state (issue 17): a second `svc serve` on the SQLite file or the state directory
// of a running one is refused at start with one line naming the path, the holder's PID and what to
// do; the first keeps serving; a lock left by kill -9 never blocks the next start.
import { spawn } from 'node:child_process';
import { readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { lockDaemonState } from '../../src/daemon/state-lock.js';
import { loadSettings } from '../../src/settings.js';
import { freePort, serveChild, testDaemon, testMibEnv } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** `svc serve` expected to fail at start: its exit code and stderr (killed after 20 s if it does not exit). */
async function serveRefused(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
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
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  clearTimeout(timer);
  return { code, stderr };
}

const holderPid = (base: string) => (JSON.parse(readFileSync(`${base}.pid`, 'utf8')) as { pid: number }).pid;

describe('one daemon per state', () => {
  it('a second svc serve on the same SQLite file is refused with the path and the PID; after kill -9 of the first a new one starts', async () => {
    const dir = tempDir('svc-lock-');
    const db = join(dir, 'svc.db');
    const first = await serveChild({ SVC_DB_PATH: db, SVC_STATE_DIR: join(dir, 'state-a'), SVC_PIPELINE_DIR: join(dir, 'pipelines') });

    // Its own state directory, the same database: refused because of the database.
    const second = await serveRefused({ SVC_DB_PATH: db, SVC_STATE_DIR: join(dir, 'state-b'), SVC_PIPELINE_DIR: join(dir, 'pipelines') });
    expect(second.code).toBe(1);
    const lines = second.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^svc: cannot start: the SQLite database ${db} \\(SVC_DB_PATH\\) is in use by another svc daemon \\(PID ${first.child.pid} on .+\\): stop that daemon first, or give this one its own SVC_DB_PATH and SVC_STATE_DIR$`,
      ),
    );
    // The first one was left alone.
    expect((await fetch(first.url + '/api/ready')).status).toBe(200);
    expect(first.child.exitCode).toBe(null);

    // kill -9 leaves the lock file behind, but not the lock: the next daemon starts at once.
    first.child.kill('SIGKILL');
    await first.exited;
    const started = Date.now();
    const third = await serveChild({ SVC_DB_PATH: db, SVC_STATE_DIR: join(dir, 'state-a'), SVC_PIPELINE_DIR: join(dir, 'pipelines') });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(holderPid(`${db}.daemon`)).toBe(third.child.pid);
    expect(holderPid(join(dir, 'state-a', 'daemon'))).toBe(third.child.pid);
  }, 60_000);

  it('a second svc serve on the same state directory (another database) is refused naming the directory', async () => {
    const dir = tempDir('svc-lock-');
    const state = join(dir, 'state');
    const first = await serveChild({ SVC_DB_PATH: join(dir, 'a.db'), SVC_STATE_DIR: state, SVC_PIPELINE_DIR: join(dir, 'pipelines') });
    const second = await serveRefused({ SVC_DB_PATH: join(dir, 'b.db'), SVC_STATE_DIR: state, SVC_PIPELINE_DIR: join(dir, 'pipelines') });
    expect(second.code).toBe(1);
    expect(second.stderr.trim()).toMatch(
      new RegExp(
        `^svc: cannot start: the state directory ${state} \\(SVC_STATE_DIR\\) is in use by another svc daemon \\(PID ${first.child.pid} on .+\\): stop that daemon first, or give this one its own SVC_STATE_DIR$`,
      ),
    );
    expect((await fetch(first.url + '/api/ready')).status).toBe(200);
  }, 60_000);
});

describe('in one process', () => {
  it('a daemon that stopped has released its locks: the next one on the same folder starts; a second one beside it does not', async () => {
    const d1 = await testDaemon();
    await expect(testDaemon({}, { dir: d1.dir })).rejects.toThrow(/the SQLite database .* is in use by another svc daemon/);
    await d1.stop();
    const d2 = await testDaemon({}, { dir: d1.dir });
    expect((await d2.call('GET', '/api/ready')).status).toBe(200);
  });
});

describe('lockDaemonState', () => {
  const settings = (env: Record<string, string>) => loadSettings({ SVC_NODE_ID: 'n', ...env });

  it('two databases in one folder share its default state directory: the second is refused; release lets it in', () => {
    const dir = tempDir('svc-lock-');
    const a = lockDaemonState(settings({ SVC_DB_PATH: join(dir, 'a.db') }));
    expect(() => lockDaemonState(settings({ SVC_DB_PATH: join(dir, 'b.db') }))).toThrow(
      new RegExp(
        `^the state directory ${join(dir, 'state')} \\(SVC_STATE_DIR, by default beside SVC_DB_PATH\\) is in use by another svc daemon \\(PID ${process.pid} `,
      ),
    );
    a.release();
    a.release(); // idempotent
    const b = lockDaemonState(settings({ SVC_DB_PATH: join(dir, 'b.db') }));
    expect(b.files).toEqual([join(dir, 'b.db.daemon.lock'), join(dir, 'state', 'daemon.lock')]);
    b.release();
  });

  it('a refused start keeps nothing locked: the database lock it took is released again', () => {
    const dir = tempDir('svc-lock-');
    const state = lockDaemonState(settings({ SVC_DB_PATH: join(dir, 'other.db'), SVC_STATE_DIR: join(dir, 'shared') }));
    expect(() => lockDaemonState(settings({ SVC_DB_PATH: join(dir, 'svc.db'), SVC_STATE_DIR: join(dir, 'shared') }))).toThrow(/state directory/);
    // svc.db was locked, then released when the state directory was refused.
    const db = lockDaemonState(settings({ SVC_DB_PATH: join(dir, 'svc.db'), SVC_STATE_DIR: join(dir, 'own') }));
    db.release();
    state.release();
  });

  it('a server database (SVC_DB_URL): only the state directory is locked; a manager locks nothing', () => {
    const dir = tempDir('svc-lock-');
    const url = 'postgresql://svc@127.0.0.1:1/svc';
    const a = lockDaemonState(settings({ SVC_DB_URL: url, SVC_DB_PATH: join(dir, 'svc.db'), SVC_STATE_DIR: join(dir, 'a') }));
    expect(a.files).toEqual([join(dir, 'a', 'daemon.lock')]);
    const b = lockDaemonState(settings({ SVC_DB_URL: url, SVC_DB_PATH: join(dir, 'svc.db'), SVC_STATE_DIR: join(dir, 'b') }));
    expect(() => lockDaemonState(settings({ SVC_DB_URL: url, SVC_STATE_DIR: join(dir, 'a') }))).toThrow(/^the state directory .* \(SVC_STATE_DIR\) is in use/);
    // A leader and its standby share their database and default state folder by design.
    const manager = lockDaemonState(settings({ SVC_MODE: 'manager', SVC_DB_URL: url, SVC_STATE_DIR: join(dir, 'a') }));
    expect(manager.files).toEqual([]);
    a.release();
    b.release();
  });

  it('two spellings of one state directory (a symlink) are one lock', () => {
    const dir = tempDir('svc-lock-');
    const a = lockDaemonState(settings({ SVC_DB_URL: 'postgresql://x@127.0.0.1:1/x', SVC_STATE_DIR: join(dir, 'real') }));
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    expect(() => lockDaemonState(settings({ SVC_DB_URL: 'postgresql://x@127.0.0.1:1/x', SVC_STATE_DIR: join(dir, 'link') }))).toThrow(
      /in use by another svc daemon/,
    );
    a.release();
  });
});
