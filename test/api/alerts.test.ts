// Alert rules of a pipeline (spec doc 2 sections 2, 4, 6, 7): CRUD, validation, and one real
// webhook delivery after a manual run.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, testDaemon, type TestDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/wait.js';
import { expectError, finishedRun, ISO, localYaml, register, workArea } from './_helpers.js';

const rule = (over: Record<string, unknown> = {}) => ({
  name: 'many-records',
  condition: 'records_in > 100',
  action: 'webhook',
  webhook_url: 'http://127.0.0.1:9/hook',
  cooldown_seconds: 60,
  ...over,
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe('alert rules CRUD', () => {
  it('list, add, conflict, update, delete', async () => {
    const d = await testDaemon();
    await register(d, localYaml('al', workArea()));
    const empty = await d.call('GET', '/api/pipelines/al/alerts');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual([]);

    const add = await d.call('POST', '/api/pipelines/al/alerts', { body: rule() });
    expect(add.status, add.text).toBe(201);
    expect(add.body).toMatchObject(rule());
    const list = await d.call('GET', '/api/pipelines/al/alerts');
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject(rule());

    expect(expectError(await d.call('POST', '/api/pipelines/al/alerts', { body: rule({ condition: 'failed' }) }), 409)).toContain('many-records');

    const put = await d.call('PUT', '/api/pipelines/al/alerts/many-records', { body: rule({ condition: 'records_in > 5', cooldown_seconds: 0 }) });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: 'many-records', condition: 'records_in > 5', cooldown_seconds: 0 });
    expect((await d.call('GET', '/api/pipelines/al/alerts')).body[0]).toMatchObject({ condition: 'records_in > 5', cooldown_seconds: 0 });

    expectError(await d.call('PUT', '/api/pipelines/al/alerts/nope', { body: rule({ name: 'nope' }) }), 404);

    const mail = await d.call('POST', '/api/pipelines/al/alerts', {
      body: { name: 'mail', condition: 'failed', action: 'email', email_to: 'noc@example.com', subject: 'x' },
    });
    expect(mail.status, mail.text).toBe(201);
    expect(mail.body).toMatchObject({ name: 'mail', action: 'email', email_to: 'noc@example.com', cooldown_seconds: 0 });

    const del = await d.call('DELETE', '/api/pipelines/al/alerts/many-records');
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectError(await d.call('DELETE', '/api/pipelines/al/alerts/many-records'), 404);
    expect((await d.call('GET', '/api/pipelines/al/alerts')).body.map((r: { name: string }) => r.name)).toEqual(['mail']);
  });

  it('PUT with another name in the body renames the rule; onto a taken name it is 409', async () => {
    const d = await testDaemon();
    await register(d, localYaml('al', workArea()));
    expect((await d.call('POST', '/api/pipelines/al/alerts', { body: rule({ name: 'a' }) })).status).toBe(201);
    expect((await d.call('POST', '/api/pipelines/al/alerts', { body: rule({ name: 'b' }) })).status).toBe(201);
    const clash = await d.call('PUT', '/api/pipelines/al/alerts/a', { body: rule({ name: 'b', condition: 'failed' }) });
    expect(expectError(clash, 409)).toContain("'b'");
    const names = async () =>
      (await d.call('GET', '/api/pipelines/al/alerts')).body.map((r: { name: string; condition: string }) => `${r.name}:${r.condition}`);
    expect(await names()).toEqual(['a:records_in > 100', 'b:records_in > 100']);
    const renamed = await d.call('PUT', '/api/pipelines/al/alerts/a', { body: rule({ name: 'c', condition: 'failed' }) });
    expect(renamed.status).toBe(200);
    expect(await names()).toEqual(['c:failed', 'b:records_in > 100']);
    expectError(await d.call('PUT', '/api/pipelines/al/alerts/a', { body: rule({ name: 'a' }) }), 404);
  });

  it('invalid rules are 422 with a detail', async () => {
    const d = await testDaemon();
    await register(d, localYaml('al', workArea()));
    const bad: [Record<string, unknown>, RegExp][] = [
      [rule({ condition: 'records_in >' }), /condition/],
      [rule({ condition: 'recordz_in > 1' }), /recordz_in/],
      [rule({ webhook_url: undefined }), /webhook_url/],
      [rule({ webhook_url: 'ftp://x/y' }), /webhook_url/],
      [rule({ action: 'sms' }), /action/],
      [rule({ cooldown_seconds: -1 }), /cooldown_seconds/],
      [rule({ name: '' }), /name/],
      [{ name: 'm', condition: 'failed', action: 'email' }, /email_to/],
    ];
    for (const [body, re] of bad) {
      const detail = expectError(await d.call('POST', '/api/pipelines/al/alerts', { body }), 422);
      expect(detail, JSON.stringify(body)).toMatch(re);
    }
    expectError(await d.call('PUT', '/api/pipelines/al/alerts/x', { body: rule({ name: 'x', condition: '(((' }) }), 422);
    expect((await d.call('GET', '/api/pipelines/al/alerts')).body).toEqual([]);
  });

  it('alerts of an unknown pipeline are 404', async () => {
    const d = await testDaemon();
    expectError(await d.call('GET', '/api/pipelines/ghost/alerts'), 404);
    expectError(await d.call('POST', '/api/pipelines/ghost/alerts', { body: rule() }), 404);
    expectError(await d.call('PUT', '/api/pipelines/ghost/alerts/many-records', { body: rule() }), 404);
    expectError(await d.call('DELETE', '/api/pipelines/ghost/alerts/many-records'), 404);
  });

  it('deleting a pipeline removes its rules', async () => {
    const d = await testDaemon();
    const w = workArea();
    await register(d, localYaml('al', w));
    expect((await d.call('POST', '/api/pipelines/al/alerts', { body: rule() })).status).toBe(201);
    expect((await d.call('DELETE', '/api/pipelines/al')).status).toBe(204);
    await register(d, localYaml('al', w));
    expect((await d.call('GET', '/api/pipelines/al/alerts')).body).toEqual([]);
  });
});

describe('alert delivery', () => {
  it('a matching rule POSTs JSON naming the pipeline and the rule after a manual run', async () => {
    const received: { method: string; type: string; body: any }[] = [];
    const server = createServer((req: IncomingMessage, res) => {
      let data = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (data += c));
      req.on('end', () => {
        received.push({ method: req.method!, type: String(req.headers['content-type']), body: JSON.parse(data) });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/alert`;

    const d = await testDaemon();
    const w = workArea(3);
    await register(d, localYaml('alerted', w));
    expect(
      (
        await d.call('POST', '/api/pipelines/alerted/alerts', {
          body: rule({ name: 'got-records', condition: 'records_in > 0', webhook_url: url, cooldown_seconds: 0 }),
        })
      ).status,
    ).toBe(201);
    expect(
      (await d.call('POST', '/api/pipelines/alerted/alerts', { body: rule({ name: 'never', condition: 'records_in > 1000', webhook_url: url }) })).status,
    ).toBe(201);
    const t = await d.call('POST', '/api/pipelines/alerted/run');
    const run = await finishedRun(d, t.body.run_id);
    expect(run.records_in).toBe(3);
    await until(() => received.length >= 1);
    expect(received).toHaveLength(1);
    const [hit] = received;
    expect(hit!.method).toBe('POST');
    expect(hit!.type).toMatch(/application\/json/);
    expect(hit!.body).toMatchObject({ pipeline: 'alerted', alert: 'got-records', condition: 'records_in > 0', action: 'webhook' });
    expect(hit!.body.run).toMatchObject({ run_id: t.body.run_id, records_in: 3, status: 'success' });
  });
});

/** An HTTP receiver on loopback that answers 200 and counts what it got. */
async function okReceiver(): Promise<{ url: string; received: () => number }> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alert`, received: () => n };
}

/** Runs the pipeline once to the end and waits until the rule's history holds `deliveries` deliveries. */
async function runAndDeliver(d: TestDaemon, pipeline: string, rule: string, wantAttempt: number): Promise<Record<string, any>[]> {
  const t = await d.call('POST', `/api/pipelines/${pipeline}/run`);
  expect(t.status, t.text).toBe(202);
  await finishedRun(d, t.body.run_id);
  return until(
    async () => {
      const h = await d.call('GET', `/api/pipelines/${pipeline}/alerts/${rule}/deliveries`);
      return h.body[0]?.run_id === t.body.run_id && h.body[0].attempt === wantAttempt ? (h.body as Record<string, any>[]) : undefined;
    },
    15_000,
    `delivery ${wantAttempt} of ${rule}`,
  );
}

const ruleOf = async (d: TestDaemon, pipeline: string, name: string) =>
  ((await d.call('GET', `/api/pipelines/${pipeline}/alerts`)).body as Record<string, any>[]).find((r) => r.name === name)!;

describe('alert delivery history', () => {
  it('a refused delivery is recorded as failed with its error and attempt; a good target then records success', async () => {
    const port = await freePort(); // nothing listens: connections are refused
    const d = await testDaemon();
    await register(d, localYaml('hist', workArea(3)));
    const secretUrl = `http://ops:hunter2pw@127.0.0.1:${port}/hook?token=t0ps3cr3t&team=noc`;
    const add = await d.call('POST', '/api/pipelines/hist/alerts', {
      body: rule({ name: 'refused', condition: 'records_in > 0', webhook_url: secretUrl, cooldown_seconds: 0 }),
    });
    expect(add.status, add.text).toBe(201);

    // Before any run: never fired, never tried.
    expect(await ruleOf(d, 'hist', 'refused')).toMatchObject({
      last_fired: null,
      delivery_status: 'never',
      last_attempt: null,
      last_delivery_error: null,
      consecutive_failures: 0,
      last_deliveries: [],
    });
    expect((await d.call('GET', '/api/pipelines/hist/alerts/refused/deliveries')).body).toEqual([]);

    const first = await runAndDeliver(d, 'hist', 'refused', 1);
    expect(first).toEqual([
      {
        at: expect.stringMatching(ISO),
        run_id: expect.any(String),
        channel: 'webhook',
        target: `http://127.0.0.1:${port}/hook?token=***&team=noc`,
        outcome: 'failed',
        detail: null,
        error: expect.stringMatching(/^connection failed: .*ECONNREFUSED/),
        attempt: 1,
      },
    ]);
    await runAndDeliver(d, 'hist', 'refused', 2);
    const failing = await ruleOf(d, 'hist', 'refused');
    expect(failing).toMatchObject({
      last_fired: null,
      delivery_status: 'failing',
      consecutive_failures: 2,
      last_delivery_error: expect.stringMatching(/^connection failed: .*ECONNREFUSED/),
    });
    expect(failing.last_attempt).toBe(failing.last_deliveries[0].at);
    expect(failing.last_deliveries.map((x: { attempt: number }) => x.attempt)).toEqual([2, 1]);
    // The rule answers as before (doc 2's fields are all there, unchanged).
    expect(failing).toMatchObject({ name: 'refused', condition: 'records_in > 0', action: 'webhook', webhook_url: secretUrl, cooldown_seconds: 0 });
    // The history never shows the URL's password or token.
    for (const path of ['/api/pipelines/hist/alerts/refused/deliveries']) {
      const text = (await d.call('GET', path)).text;
      expect(text).not.toContain('hunter2pw');
      expect(text).not.toContain('t0ps3cr3t');
    }
    expect(JSON.stringify(failing.last_deliveries)).not.toMatch(/hunter2pw|t0ps3cr3t/);

    // The receiver is fixed: the next delivery goes through, on attempt 3; the one after is attempt 1 again.
    const good = await okReceiver();
    const put = await d.call('PUT', '/api/pipelines/hist/alerts/refused', {
      body: rule({ name: 'refused', condition: 'records_in > 0', webhook_url: good.url, cooldown_seconds: 0 }),
    });
    expect(put.status, put.text).toBe(200);
    const third = await runAndDeliver(d, 'hist', 'refused', 3);
    expect(third[0]).toMatchObject({ outcome: 'delivered', detail: 'HTTP 200 OK', error: null, target: good.url, attempt: 3 });
    expect(good.received()).toBe(1);
    const ok = await ruleOf(d, 'hist', 'refused');
    expect(ok).toMatchObject({ delivery_status: 'delivered', last_delivery_error: null, consecutive_failures: 0 });
    expect(ok.last_fired).toBe(third[0]!.at);
    expect(ok.last_attempt).toBe(third[0]!.at);
    const fourth = await runAndDeliver(d, 'hist', 'refused', 1);
    expect(fourth.map((x) => [x.outcome, x.attempt])).toEqual([
      ['delivered', 1],
      ['delivered', 3],
      ['failed', 2],
      ['failed', 1],
    ]);

    expectError(await d.call('GET', '/api/pipelines/hist/alerts/nope/deliveries'), 404);
    expectError(await d.call('GET', '/api/pipelines/ghost/alerts/refused/deliveries'), 404);
  });

  it('keeps the last 20 deliveries of a rule, and they survive a daemon restart', async () => {
    const port = await freePort();
    const d1 = await testDaemon();
    await register(d1, localYaml('bounded', workArea(1)));
    const body = rule({ name: 'down', condition: 'records_in > 0', webhook_url: `http://127.0.0.1:${port}/hook`, cooldown_seconds: 0 });
    expect((await d1.call('POST', '/api/pipelines/bounded/alerts', { body })).status).toBe(201);
    for (let i = 1; i <= 22; i++) await runAndDeliver(d1, 'bounded', 'down', i);
    const before = (await d1.call('GET', '/api/pipelines/bounded/alerts/down/deliveries')).body as Record<string, any>[];
    expect(before).toHaveLength(20);
    expect(before.map((x) => x.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => 22 - i));
    expect((await ruleOf(d1, 'bounded', 'down')).last_deliveries).toEqual(before);
    await d1.stop();

    const d2 = await testDaemon({}, { dir: d1.dir });
    expect((await d2.call('GET', '/api/pipelines/bounded/alerts/down/deliveries')).body).toEqual(before);
    expect(await ruleOf(d2, 'bounded', 'down')).toMatchObject({ delivery_status: 'failing', consecutive_failures: 22, last_fired: null });
    // The count goes on where it was.
    const after = await runAndDeliver(d2, 'bounded', 'down', 23);
    expect(after).toHaveLength(20);
    expect(after[1]).toEqual(before[0]);
  }, 90_000);
});
