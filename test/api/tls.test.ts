// HTTPS (SVC_TLS_CERTFILE / SVC_TLS_KEYFILE, spec doc 2 section 5): the daemon serves TLS only, with
// the configured certificate; a missing or unusable file stops the start with one line naming the
// variable.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';

let dir: string;
let certFile: string;
let keyFile: string;

beforeAll(() => {
  // Not tempDir(): that one is removed after each test, the certificate serves the whole file.
  dir = mkdtempSync(join(tmpdir(), 'svc-tls-'));
  certFile = join(dir, 'cert.pem');
  keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-days',
      '1',
    ],
    { stdio: 'ignore' },
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function request(get: typeof httpsGet, url: string, opts: Record<string, unknown> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, opts, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(3000, () => req.destroy(new Error('timeout')));
  });
}

describe('HTTPS', () => {
  it('serves TLS with the configured certificate and refuses plain HTTP', async () => {
    const d = await testDaemon({ SVC_TLS_CERTFILE: certFile, SVC_TLS_KEYFILE: keyFile });
    expect(d.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ok = await request(httpsGet, `${d.url}/api/health`, { ca: readFileSync(certFile) });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ status: 'ok' });
    // Without the certificate as a trusted CA the client refuses the self-signed certificate.
    await expect(request(httpsGet, `${d.url}/api/health`)).rejects.toThrow(/self-signed|self signed/);
    // Plain HTTP on the same port gets no HTTP answer.
    const plain = d.url.replace(/^https:/, 'http:') + '/api/health';
    const r = await request(httpGet as typeof httpsGet, plain).then(
      (x) => x,
      (e: Error) => e,
    );
    expect(r).toBeInstanceOf(Error);
  });

  it('stops the start with one line naming SVC_TLS_CERTFILE when the certificate is missing', async () => {
    const missing = join(tempDir('svc-tls-missing-'), 'nope.pem');
    const err = await testDaemon({ SVC_TLS_CERTFILE: missing, SVC_TLS_KEYFILE: keyFile }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toBe(`SVC_TLS_CERTFILE: cannot read ${missing}: no such file`);
    expect(err!.message).not.toContain('\n');
  });

  it('refuses a key file without a certificate and a key that does not parse', async () => {
    await expect(testDaemon({ SVC_TLS_KEYFILE: keyFile })).rejects.toThrow(/^SVC_TLS_KEYFILE is set but SVC_TLS_CERTFILE is empty/);
    const bad = join(tempDir('svc-tls-bad-'), 'key.pem');
    writeFileSync(bad, 'not a key\n');
    await expect(testDaemon({ SVC_TLS_CERTFILE: certFile, SVC_TLS_KEYFILE: bad })).rejects.toThrow(/^SVC_TLS_CERTFILE \/ SVC_TLS_KEYFILE: cannot use /);
  });
});
