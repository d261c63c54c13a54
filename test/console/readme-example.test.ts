// The README's operator-console walk-through, as a newcomer runs it: a first-run console (no
// SVC_AUTH_USERS), the password taken from the log, the README's login body and its MIB upload with
// the file the README names (which must be in the repository).
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleOn } from './helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('README: the operator console walk-through', () => {
  it("logs in as the README's user with the first-run password from the log, and uploads the README's MIB file", async () => {
    const login = /-d '(\{"username":[^']*\})' http:\/\/localhost:8770\/api\/settings\/login/.exec(readme);
    expect(login, 'the README shows a console login').not.toBeNull();
    const { username } = JSON.parse(login![1]!) as { username: string };
    const uploadLine = /-F 'files\[\]=@([^']+)' http:\/\/localhost:8770\/api\/mibs\/upload/.exec(readme);
    expect(uploadLine, 'the README shows a MIB upload').not.toBeNull();
    const file = uploadLine![1]!;
    expect(existsSync(join(ROOT, file)), `${file} is in the repository`).toBe(true);

    const a = await consoleOn();
    const line = a.logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('console first-run password generated'));
    expect(line?.username).toBe(username);
    expect(readme.replace(/\s+/g, ' '), 'the README names the log line').toContain('`console first-run password generated`');
    const token = await a.login(username, line!.password as string);

    const fd = new FormData();
    fd.append('files[]', new Blob([readFileSync(join(ROOT, file))]), basename(file));
    const res = await fetch(`${a.c.url}/api/mibs/upload`, { method: 'POST', headers: { 'x-auth-token': token }, body: fd });
    const body = (await res.json()) as { results: Record<string, string> };
    expect(res.status, JSON.stringify(body)).toBe(200);
    const module = readFileSync(join(ROOT, file), 'utf8').split(/\s/)[0]!;
    expect(body.results).toEqual({ [module]: 'compiled' });
  });
});
