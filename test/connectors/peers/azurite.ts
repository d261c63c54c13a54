// Peer fixture for the azure_blob connector: Azurite (Microsoft's Blob Storage emulator, the npm
// devDependency azurite 3.35.0) as a child process of the test on a free loopback port, with disk
// persistence in a temporary directory so that restart() (SIGTERM, which saves its metadata, then
// the same port and directory) keeps every committed blob, as the service does across a dropped
// connection. It checks the Shared Key signature of every request: the well-known development
// account works, any other key is refused with 403 AuthorizationFailure.
// Telemetry is off (it would reach the internet) and the API version check is skipped (the SDK is
// newer than the emulator).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { freePort } from '../../helpers/net.js';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { pollingCollector } from './polling.js';

export const DEV_ACCOUNT = 'devstoreaccount1';
/** Azurite's published development key (not a secret). */
export const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

const MAIN = fileURLToPath(new URL('../../../node_modules/azurite/dist/src/blob/main.js', import.meta.url));

export interface Azurite {
  port: number;
  /** The blob service URL of the development account: `http://127.0.0.1:PORT/devstoreaccount1`. */
  url: string;
  /** A connection string for the development account, at `port` (default: Azurite's own). */
  connectionString(opts?: { port?: number; key?: string }): string;
  /** A client of the development account for the test's own reads and writes. */
  admin(): BlobServiceClient;
  pid(): number;
  /** SIGTERM (Azurite saves its metadata and drops every connection), then the same port and data. */
  restart(): Promise<void>;
  /** Stops it (SIGTERM) until the returned function starts it again on the same port and data. */
  down(): Promise<() => Promise<void>>;
  stop(): Promise<void>;
}

export async function startAzurite(): Promise<Azurite> {
  const port = await freePort();
  const location = mkdtempSync(join(tmpdir(), 'svc-azurite-'));
  let child: ChildProcess | undefined;
  let log = '';

  const start = async () => {
    const c = spawn(
      process.execPath,
      [MAIN, '--blobHost', '127.0.0.1', '--blobPort', String(port), '--disableTelemetry', '--skipApiVersionCheck', '--location', location],
      {
        cwd: location,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child = c;
    log = '';
    const ready = new Promise<void>((resolve, reject) => {
      const onData = (t: string) => {
        log = (log + t).slice(-4000);
        if (log.includes('successfully listens')) resolve();
      };
      c.stdout!.setEncoding('utf8').on('data', onData);
      c.stderr!.setEncoding('utf8').on('data', onData);
      c.once('exit', (code) => reject(new Error(`azurite exited (${code}): ${log}`)));
    });
    const timer = setTimeout(() => c.kill('SIGKILL'), 20_000);
    try {
      await ready;
    } finally {
      clearTimeout(timer);
    }
  };

  const halt = async (signal: NodeJS.Signals) => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = once(c, 'exit');
    c.kill(signal);
    const force = setTimeout(() => c.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(force);
  };

  await start();
  const url = `http://127.0.0.1:${port}/${DEV_ACCOUNT}`;
  const connectionString = (opts: { port?: number; key?: string } = {}) =>
    `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${opts.key ?? DEV_KEY};BlobEndpoint=http://127.0.0.1:${opts.port ?? port}/${DEV_ACCOUNT};`;
  return {
    port,
    url,
    connectionString,
    admin: () => BlobServiceClient.fromConnectionString(connectionString(), { retryOptions: { maxTries: 3, retryDelayInMs: 200 } }),
    pid: () => child?.pid ?? -1,
    async restart() {
      await halt('SIGTERM');
      await start();
    },
    async down() {
      await halt('SIGTERM');
      return start;
    },
    async stop() {
      await halt('SIGTERM');
      rmSync(location, { recursive: true, force: true });
    },
  };
}

/** Every blob under `prefix`, in name order, with its bytes. */
export async function blobsUnder(cc: ContainerClient, prefix: string): Promise<{ name: string; data: Buffer; contentType?: string }[]> {
  const out: { name: string; data: Buffer; contentType?: string }[] = [];
  for await (const b of cc.listBlobsFlat({ prefix })) {
    out.push({ name: b.name, data: await cc.getBlobClient(b.name).downloadToBuffer(), contentType: b.properties.contentType });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

export const CONFORMANCE_CONTAINER = 'svc-conformance';

/**
 * The conformance fixture: one Azurite for the test file. A source channel is a prefix holding the
 * bodies as JSON-array blobs of up to 400 records; a sink channel is the prefix its blobs are
 * written under, polled with the SDK. Wrong credentials: the same account with another key.
 */
export const azuriteFixture: PeerFixture = {
  type: 'azure_blob',
  badConfig: { role: 'sink', set: { container: 'Bad_Container' }, path: 'container' },
  async start(): Promise<Peer> {
    const az = await startAzurite();
    const cc = az.admin().getContainerClient(CONFORMANCE_CONTAINER);
    await cc.createIfNotExists();
    const base = { type: 'azure_blob', container: CONFORMANCE_CONTAINER, connection_string: az.connectionString() };
    return {
      source: {
        config: (ch) => ({ ...base, prefix: `${ch}/` }),
        async publish(ch, bodies) {
          for (let i = 0; i < bodies.length; i += 400) {
            const text = `[${bodies
              .slice(i, i + 400)
              .map((b) => b.toString())
              .join(',')}]`;
            await cc.getBlockBlobClient(`${ch}/part-${String(i).padStart(6, '0')}.json`).upload(text, Buffer.byteLength(text));
          }
        },
      },
      sink: {
        config: (ch) => ({ ...base, blob_template: `${ch}/{pipeline}_{timestamp}.json` }),
        collect: (ch) => poll(cc, `${ch}/`),
      },
      wrongPort: (cfg) => ({ ...cfg, connection_string: az.connectionString({ port: 1 }) }),
      wrongCredentials: (cfg) => ({ ...cfg, connection_string: az.connectionString({ key: `wrongkey${'A'.repeat(80)}` }) }),
      disrupt: () => az.restart(),
      down: () => az.down(),
      stop: () => az.stop(),
    };
  },
};

/** Reads the blobs under `prefix` every 100 ms until closed (records() answers at once); deletes them on close. */
async function poll(cc: ContainerClient, prefix: string): Promise<Collector> {
  // While Azurite restarts, what was read last stays.
  return pollingCollector(async () => (await blobsUnder(cc, prefix)).flatMap((b) => JSON.parse(b.data.toString('utf8')) as Rec[]), {
    onClose: async () => {
      for await (const b of cc.listBlobsFlat({ prefix })) await cc.deleteBlob(b.name).catch(() => undefined);
    },
  });
}

/**
 * An HTTP proxy in front of Azurite that rewrites each request URL (the paging case makes it answer
 * in pages of a few blobs: Azurite's own page is 5,000). Only requests authorized by a SAS can be
 * rewritten: a Shared Key signature covers the whole query string.
 */
export async function rewritingProxy(targetPort: number, rewrite: (url: string) => string): Promise<{ port: number; urls: string[]; close(): Promise<void> }> {
  const urls: string[] = [];
  const server = createServer((req, res) => {
    const url = rewrite(req.url ?? '/');
    urls.push(url);
    const up = httpRequest(
      { host: '127.0.0.1', port: targetPort, method: req.method, path: url, headers: { ...req.headers, host: `127.0.0.1:${targetPort}` } },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    urls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
