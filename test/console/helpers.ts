// Test helpers of the console: a console on an ephemeral loopback port with its own state and MIB
// directories, a fetch wrapper, login.
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, expect } from 'vitest';
import { startConsole, type Console } from '../../src/console/server.js';
import { loadSettings } from '../../src/settings.js';
import { testMibEnv } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';

export const started: Console[] = [];
afterEach(async () => {
  for (const c of started.splice(0)) await c.stop();
});

/** A console on an ephemeral loopback port; `logs` collects its log lines (JSON). */
export async function consoleOn(env: Record<string, string> = {}, dir = tempDir('svc-console-')) {
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const settings = loadSettings({
    SVC_HOST: '127.0.0.1',
    SVC_CONSOLE_PORT: '0',
    SVC_STATE_DIR: dir,
    SVC_DB_PATH: join(dir, 'svc.db'),
    ...testMibEnv(dir),
    ...env,
  });
  const c = await startConsole(settings, pino({ level: 'info' }, sink));
  started.push(c);
  const call = async (method: string, path: string, o: { body?: unknown; token?: string } = {}) => {
    const headers: Record<string, string> = {};
    if (o.token) headers['x-auth-token'] = o.token;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(c.url + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined, headers: res.headers };
  };
  const login = async (username: string, password: string) => {
    const r = await call('POST', '/api/settings/login', { body: { username, password } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.token as string;
  };
  return { c, call, login, logs, dir };
}

export const detailOnly = (r: { status: number; body: any }, status: number) => {
  expect(r.status).toBe(status);
  expect(Object.keys(r.body)).toEqual(['detail']);
  return r.body.detail as string;
};

/** A console with user ops / s3cret-pass, logged in: `api(method, path, body?)` sends the token. */
export async function loggedIn(env: Record<string, string> = {}, dir?: string) {
  const a = await consoleOn({ SVC_AUTH_USERS: 'ops:s3cret-pass', ...env }, dir);
  const token = await a.login('ops', 's3cret-pass');
  const api = (method: string, path: string, body?: unknown) => a.call(method, path, { body, token });
  return { ...a, token, api };
}
