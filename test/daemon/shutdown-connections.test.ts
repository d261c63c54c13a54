// A stop does not wait for a browser's connections (issue 29: an open browser held the daemon's stop
// for 16 s). What a browser holds open: a connection opened ahead with nothing sent yet (Chromium's
// preconnect), a keep-alive connection idle after its answer, and a request still in flight. Node's
// server.close() waits for the first until its headers timeout (60 s, checked every 30 s) and for the
// in-flight one until Fastify's keep-alive timeout (72 s) after its answer; each stop below must end
// well before either, with every such connection closed.
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, serveChild, testDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { until } from '../helpers/wait.js';

/** A deadline far below the old behaviour's 30-72 s and far above a prompt stop. */
const BOUND_MS = 15_000;

async function opened(url: string): Promise<Socket & { gone: Promise<void> }> {
  const u = new URL(url);
  const s = connect(Number(u.port), u.hostname);
  await new Promise<void>((r, j) => s.once('connect', r).once('error', j));
  s.on('error', () => {});
  const gone = new Promise<void>((r) => s.once('close', () => r()));
  return Object.assign(s, { gone });
}

/** A keep-alive connection that got one answer and now sits idle, as a browser keeps it. */
async function idleKeepAlive(url: string) {
  const s = await opened(url);
  let text = '';
  s.setEncoding('utf8').on('data', (d: string) => (text += d));
  s.write(`GET /api/health HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: keep-alive\r\n\r\n`);
  await until(() => text.includes('"status"'), 10_000, 'the health answer');
  expect(text).toMatch(/^HTTP\/1\.1 200/);
  expect(text.toLowerCase()).toContain('connection: keep-alive');
  return s;
}

/** A request whose body is still coming: in flight when the stop begins. */
async function inFlight(url: string) {
  const s = await opened(url);
  s.write(`POST /api/pipelines HTTP/1.1\r\nHost: ${new URL(url).host}\r\nContent-Type: application/yaml\r\nContent-Length: 1000\r\n\r\nversion: "1"\n`);
  return s;
}

const within = <T>(p: Promise<T>, what: string) =>
  Promise.race([p, new Promise<never>((_, j) => setTimeout(() => j(new Error(`${what} took longer than ${BOUND_MS} ms`)), BOUND_MS).unref())]);

describe('the stop and the connections a browser keeps open', () => {
  it("the daemon's stop closes a preconnected, an idle keep-alive and an in-flight connection and ends within the bound", async () => {
    const d = await testDaemon();
    const sockets = [await opened(d.url), await idleKeepAlive(d.url), await inFlight(d.url)];
    await within(d.stop(), 'the stop');
    await within(Promise.all(sockets.map((s) => s.gone)), 'closing the connections');
  });

  it('svc serve: SIGTERM with connections held open to the API and the console exits 0 within the bound', async () => {
    const consolePort = await freePort();
    const dir = tempDir('svc-serve-conns-');
    const s = await serveChild({ SVC_CONSOLE_PORT: String(consolePort), SVC_DB_PATH: `${dir}/svc.db`, SVC_PIPELINE_DIR: dir });
    const consoleUrl = `http://127.0.0.1:${consolePort}`;
    await until(async () => (await fetch(`${consoleUrl}/api/health`).catch(() => undefined))?.status === 200, 20_000, 'the console');
    const sockets = [await opened(s.url), await idleKeepAlive(s.url), await opened(consoleUrl), await idleKeepAlive(consoleUrl)];
    s.child.kill('SIGTERM');
    expect(await within(s.exited, 'svc serve exiting'), s.stderr()).toEqual({ code: 0, signal: null });
    await within(Promise.all(sockets.map((x) => x.gone)), 'closing the connections');
  });
});
