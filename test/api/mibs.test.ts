// The daemon's MIB endpoints (spec doc 2): list, upload (field `file`), download from a repository,
// read one compiled module, delete; and one store shared with the console under `svc serve`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, serveChild, testDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { ACME, CORPUS } from '../mib/helpers.js';

const BROKEN = `BROKEN-MIB DEFINITIONS ::= BEGIN
IMPORTS enterprises FROM SNMPv2-SMI;
broken OBJECT IDENTIFIER ::= { enterprises ] }
END
`;

async function upload(url: string, name: string, text: string, field = 'file') {
  const form = new FormData();
  form.append(field, new Blob([text]), name);
  const res = await fetch(`${url}/api/mibs/upload`, { method: 'POST', body: form });
  return { status: res.status, body: (await res.json()) as any };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A MIB repository over real HTTP: GET /<MODULE> answers the module text or 404. */
async function repository(modules: Record<string, string>) {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url!);
    const text = modules[decodeURIComponent(req.url!.slice(1))];
    res.writeHead(text ? 200 : 404, { 'content-type': 'text/plain' }).end(text ?? 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, hits };
}

describe('daemon /api/mibs', () => {
  it('lists the bundled modules; upload compiles with the OID snmptranslate gives; GET one is the compiled JSON; DELETE removes it', async () => {
    const d = await testDaemon();
    const list = await d.call('GET', '/api/mibs');
    expect(list.status).toBe(200);
    expect(list.body.map((m: any) => m.name)).toEqual(expect.arrayContaining(['IF-MIB', 'SNMPv2-SMI', 'SNMPv2-MIB']));
    expect(list.body[0]).toEqual({
      name: expect.any(String),
      file: expect.stringMatching(/\.json$/),
      size_bytes: expect.any(Number),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    const up = await upload(d.url, 'ACME-MIB.mib', ACME);
    expect(up.status).toBe(200);
    expect(up.body).toEqual({ compiled: ['ACME-MIB'], mib_dir: join(d.dir, 'mibs'), results: { 'ACME-MIB': 'compiled' } });
    const one = await d.call('GET', '/api/mibs/ACME-MIB');
    expect(one.status).toBe(200);
    const node = one.body.nodes.find((n: any) => n.name === 'acmeTemp');
    const dir = tempDir('svc-mib-ref-');
    writeFileSync(join(dir, 'ACME-MIB.txt'), ACME);
    const expected = execFileSync('snmptranslate', ['-M', `${dir}:${CORPUS}`, '-m', 'ACME-MIB', '-On', 'ACME-MIB::acmeTemp'], { encoding: 'utf8' }).trim();
    expect('.' + node.oid).toBe(expected);
    expect(node.syntax).toMatchObject({ base: 'Integer32', ranges: [[-40, 125]] });
    expect((await d.call('GET', '/api/mibs')).body.some((m: any) => m.name === 'ACME-MIB')).toBe(true);

    const del = await d.call('DELETE', '/api/mibs/ACME-MIB');
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ deleted: 'ACME-MIB', files: ['common/ACME-MIB.mib'], still_active: false });
    expect((await d.call('GET', '/api/mibs/ACME-MIB')).status).toBe(404);
    expect((await d.call('DELETE', '/api/mibs/ACME-MIB')).body).toEqual({ detail: expect.stringContaining('no MIB module ACME-MIB') });
    const bundled = await d.call('DELETE', '/api/mibs/IF-MIB');
    expect(bundled.status).toBe(403);
    expect(bundled.body.detail).toContain('read-only bundled');
    expect((await d.call('GET', '/api/mibs/IF-MIB')).status).toBe(200);
  });

  it('bad uploads: a syntax error is a failed result with file:line; wrong field 400; not multipart 415; wrong extension 415; bad name 400', async () => {
    const d = await testDaemon();
    const bad = await upload(d.url, 'BROKEN-MIB.mib', BROKEN);
    expect(bad.status).toBe(200);
    expect(bad.body.compiled).toEqual([]);
    expect(bad.body.results['BROKEN-MIB']).toMatch(/^failed: common\/BROKEN-MIB\.mib:3:\d+ .*']'/);
    const wrongField = await upload(d.url, 'ACME-MIB.mib', ACME, 'files');
    expect(wrongField).toEqual({ status: 400, body: { detail: expect.stringContaining("unexpected file field 'files'") } });
    const json = await d.call('POST', '/api/mibs/upload', { body: { file: ACME } });
    expect(json.status).toBe(415);
    expect(Object.keys(json.body)).toEqual(['detail']);
    expect((await upload(d.url, 'acme.pdf', ACME)).status).toBe(415);
    expect((await d.call('GET', '/api/mibs/..%2Fetc')).status).toBe(422);
  });

  it('download: from a repository over HTTP (with imports it needs from the bundle); 404 unknown; 502 unreachable; 503 without a repository', async () => {
    const repo = await repository({ 'ACME-MIB': ACME });
    const d = await testDaemon({ SVC_MIB_REPOSITORY_URL: repo.url });
    const ok = await d.call('POST', '/api/mibs/download', { body: { names: ['ACME-MIB'] } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ compiled: ['ACME-MIB'], mib_dir: join(d.dir, 'mibs'), results: { 'ACME-MIB': 'compiled' }, not_found: [] });
    expect(repo.hits).toEqual(['/ACME-MIB']);
    const missing = await d.call('POST', '/api/mibs/download', { body: { names: ['NOPE-MIB'] } });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toContain('NOPE-MIB');

    const closed = await freePort();
    const down = await testDaemon({ SVC_MIB_REPOSITORY_URL: `http://127.0.0.1:${closed}/mibs/@mib@.txt` });
    const unreachable = await down.call('POST', '/api/mibs/download', { body: { names: ['ACME-MIB'] } });
    expect(unreachable.status).toBe(502);
    expect(unreachable.body.detail).toMatch(/cannot be reached \(ECONNREFUSED\)/);

    const none = await testDaemon();
    const unset = await none.call('POST', '/api/mibs/download', { body: { names: ['ACME-MIB'] } });
    expect(unset.status).toBe(503);
    expect(unset.body.detail).toContain('SVC_MIB_REPOSITORY_URL');
    expect((await none.call('POST', '/api/mibs/download', { body: { names: [] } })).status).toBe(422);
  });

  it('DELETE /api/mibs/{name} of a module whose file also defines other modules is 409 naming them; nothing is deleted', async () => {
    const d = await testDaemon();
    const both = ACME + ACME.replaceAll('ACME-MIB', 'ACME2-MIB').replaceAll('acme', 'acmetwo').replace('99999', '99998');
    expect((await upload(d.url, 'both.mib', both)).body.compiled).toEqual(['ACME-MIB', 'ACME2-MIB']);
    const r = await d.call('DELETE', '/api/mibs/ACME-MIB');
    expect(r.status).toBe(409);
    expect(r.body).toEqual({
      detail: `ACME-MIB is defined in common/both.mib together with ACME2-MIB, which deleting the file would remove too: delete the file itself with the console's DELETE /api/mibs/file {"path": "common/both.mib"}, or upload the file again without ACME-MIB`,
    });
    expect((await d.call('GET', '/api/mibs/ACME2-MIB')).status).toBe(200);
    expect((await d.call('GET', '/api/mibs/ACME-MIB')).status).toBe(200);
  });

  it('download: a request with found and unknown names is 200 listing not_found (also without a repository); 503 only when none is found and no repository is set', async () => {
    const d = await testDaemon();
    const mixed = await d.call('POST', '/api/mibs/download', { body: { names: ['TCP-MIB', 'NOPE-MIB'] } });
    expect(mixed.status).toBe(200);
    expect(mixed.body).toEqual({ compiled: ['TCP-MIB'], mib_dir: join(d.dir, 'mibs'), results: { 'TCP-MIB': 'compiled' }, not_found: ['NOPE-MIB'] });
    expect((await d.call('POST', '/api/mibs/download', { body: { names: ['NOPE-MIB'] } })).status).toBe(503);
  });

  it('download with user:password in SVC_MIB_REPOSITORY_URL: sent as Basic authorization; a 502 detail does not show the password', async () => {
    const seen: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(ACME);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    const port = (server.address() as { port: number }).port;
    const d = await testDaemon({ SVC_MIB_REPOSITORY_URL: `http://ops:t0p-s3cret@127.0.0.1:${port}` });
    expect((await d.call('POST', '/api/mibs/download', { body: { names: ['ACME-MIB'] } })).body.compiled).toEqual(['ACME-MIB']);
    expect(seen).toEqual([`Basic ${Buffer.from('ops:t0p-s3cret').toString('base64')}`]);
    const closed = await freePort();
    const down = await testDaemon({ SVC_MIB_REPOSITORY_URL: `http://ops:t0p-s3cret@127.0.0.1:${closed}/mibs` });
    const r = await down.call('POST', '/api/mibs/download', { body: { names: ['ACME-MIB'] } });
    expect(r.status).toBe(502);
    expect(r.body).toEqual({
      detail: `ACME-MIB: the MIB repository http://***@127.0.0.1:${closed}/mibs/ACME-MIB cannot be reached (ECONNREFUSED); check mib_repository_url and the network`,
    });
  });

  it("svc serve: the daemon and the console share one MIB store; changes through the daemon count in the console's stats.mibs", async () => {
    const dir = tempDir('svc-serve-mibs-');
    mkdirSync(join(dir, 'p'));
    const consolePort = await freePort();
    const { url } = await serveChild({
      SVC_DB_PATH: join(dir, 'svc.db'),
      SVC_PIPELINE_DIR: join(dir, 'p'),
      SVC_CONSOLE_PORT: String(consolePort),
      SVC_AUTH_USERS: 'ops:s3cret-pass',
    });
    expect((await upload(url, 'ACME-MIB.mib', ACME)).body.compiled).toEqual(['ACME-MIB']);
    const con = `http://127.0.0.1:${consolePort}`;
    const login = await fetch(`${con}/api/settings/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ops', password: 's3cret-pass' }),
    });
    const { token } = (await login.json()) as { token: string };
    const status = (await (await fetch(`${con}/api/mibs/status`, { headers: { 'x-auth-token': token } })).json()) as any;
    expect(status.mibs).toContain('ACME-MIB');
    expect(status.source_inventory).toContainEqual(expect.objectContaining({ path: 'common/ACME-MIB.mib', status: 'active', module: 'ACME-MIB' }));
    const stats = async () => ((await (await fetch(`${con}/api/stats/`, { headers: { 'x-auth-token': token } })).json()) as any).mibs;
    expect(await stats()).toEqual({ uploads: 1, compiled: 1, failed: 0 });
    expect((await upload(url, 'BROKEN-MIB.mib', BROKEN)).status).toBe(200);
    expect(
      (
        await fetch(`${url}/api/mibs/download`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ names: ['TCP-MIB'] }),
        })
      ).status,
    ).toBe(200);
    expect((await fetch(`${url}/api/mibs/ACME-MIB`, { method: 'DELETE' })).status).toBe(200);
    expect(await stats()).toEqual({ uploads: 2, compiled: 2, failed: 1 });
  });
});
