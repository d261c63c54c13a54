// Test certificates made with openssl (installed here) in a directory of the test's own: a CA, a
// server certificate for 127.0.0.1/localhost and a client certificate (mutual TLS), both signed by
// it, and an unrelated CA that signed neither.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Paths of the PEM files makeCerts() wrote. */
export interface Certs {
  ca: string;
  /** A CA that did not sign the server or client certificate. */
  otherCa: string;
  /** The server certificate (CN localhost, SAN IP:127.0.0.1 and DNS:localhost) and its key. */
  serverCert: string;
  serverKey: string;
  /** A client certificate (CN svc test client, extendedKeyUsage clientAuth) and its key. */
  clientCert: string;
  clientKey: string;
}

/** CA, server and client certificates signed by it, and an unrelated CA, in `dir` (ca.pem, server.pem, server.key, client.pem, client.key, other-ca.pem). */
export async function makeCerts(dir: string): Promise<Certs> {
  const o = (...args: string[]) => run('openssl', args, { cwd: dir });
  await o('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=svc test CA');
  await o('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other-ca.key', '-out', 'other-ca.pem', '-days', '2', '-subj', '/CN=svc other CA');
  const signed = async (name: string, subject: string, ext: string) => {
    await o('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    writeFileSync(join(dir, `${name}.ext`), ext);
    await o(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  await signed('server', '/CN=localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await signed('client', '/CN=svc test client', 'extendedKeyUsage=clientAuth\n');
  return {
    ca: join(dir, 'ca.pem'),
    otherCa: join(dir, 'other-ca.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
  };
}
