// The start lines say where the servers really listen: the bound address and the real port (port 0
// resolved), every interface named as such, and a WARNING with the way to restrict an API that
// listens on every interface without SVC_API_KEY.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { openApiWarning } from '../../src/daemon/daemon.js';
import { consoleOn } from '../console/helpers.js';
import { testDaemon } from '../helpers/daemon.js';

function capturingLogger() {
  const lines: Record<string, any>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

const WARN = 40;

describe('the listening lines', () => {
  it('every interface without SVC_API_KEY: the line names 0.0.0.0 and the real port, and a WARNING says how to restrict it', async () => {
    const { log, lines } = capturingLogger();
    const d = await testDaemon({ SVC_HOST: '0.0.0.0', SVC_PORT: '0' }, { log });
    const port = Number(new URL(d.url).port);
    expect(port).toBeGreaterThan(0);
    const started = lines.find((l) => String(l.msg).startsWith('svc daemon listening'));
    expect(started).toMatchObject({ listen: `0.0.0.0:${port}`, url: `http://127.0.0.1:${port}` });
    expect(started!.msg).toBe(`svc daemon listening on 0.0.0.0:${port} (every interface; from this machine http://127.0.0.1:${port})`);
    const warning = lines.find((l) => l.level === WARN && l.listen === `0.0.0.0:${port}`);
    expect(warning?.msg).toBe(openApiWarning(`0.0.0.0:${port}`));
    expect(warning!.msg).toContain('SVC_HOST=127.0.0.1');
    expect(warning!.msg).toContain('set SVC_API_KEY');
    // The API answers on the address the line gives.
    expect((await fetch(`${started!.url}/api/health`)).status).toBe(200);
  });

  it('every interface with SVC_API_KEY, or loopback only: no warning', async () => {
    const keyed = capturingLogger();
    await testDaemon({ SVC_HOST: '0.0.0.0', SVC_API_KEY: 'k3y' }, { log: keyed.log });
    expect(keyed.lines.some((l) => String(l.msg).startsWith('svc daemon listening on 0.0.0.0:'))).toBe(true);
    expect(keyed.lines.filter((l) => l.level === WARN && 'listen' in l)).toEqual([]);

    const local = capturingLogger();
    const d = await testDaemon({ SVC_HOST: '127.0.0.1' }, { log: local.log });
    const port = new URL(d.url).port;
    expect(local.lines.find((l) => String(l.msg).startsWith('svc daemon listening'))!.msg).toBe(
      `svc daemon listening on 127.0.0.1:${port} (http://127.0.0.1:${port})`,
    );
    expect(local.lines.filter((l) => l.level === WARN && 'listen' in l)).toEqual([]);
  });

  it('the console names its bound address and port', async () => {
    const a = await consoleOn();
    const port = new URL(a.c.url).port;
    expect(Number(port)).toBeGreaterThan(0);
    expect(a.logs.find((l) => String(l.msg).startsWith('svc console listening'))).toMatchObject({
      listen: `127.0.0.1:${port}`,
      msg: `svc console listening on 127.0.0.1:${port} (http://127.0.0.1:${port})`,
    });
  });
});
