// Email alerts against a real SMTP server (smtp-server) on loopback: plain SMTP, STARTTLS with a
// certificate made for the test, AUTH, rejected recipients, a server that never answers.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deliverEmail, type SmtpSettings } from '../../src/alerts/deliver.js';
import { AlertEvaluator, type AlertEvaluatorOptions } from '../../src/alerts/evaluator.js';
import type { RunRecord } from '../../src/engine/run-record.js';
import { openStore } from '../../src/store/index.js';
import type { AlertRule, Store } from '../../src/store/types.js';
import { tempDir } from '../helpers/fs.js';

// ---------------------------------------------------------------- peers

interface Mail {
  from: string;
  to: string[];
  secure: boolean;
  user: unknown;
  headers: Record<string, string>;
  body: string;
}

interface Smtp {
  port: number;
  mails: Mail[];
  /** Recipients answered with 550 at RCPT TO. */
  reject: Set<string>;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/** Headers (unfolded, lower-case names) and the decoded text body of a raw message. */
function parseMail(raw: string): { headers: Record<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers: Record<string, string> = {};
  for (const line of raw
    .slice(0, split)
    .replace(/\r\n[ \t]+/g, ' ')
    .split('\r\n')) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.slice(split + 4);
  if (/quoted-printable/i.test(headers['content-transfer-encoding'] ?? '')) {
    body = Buffer.from(
      body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
      'latin1',
    ).toString('utf8');
  }
  return { headers, body: body.replace(/\r\n/g, '\n') };
}

async function smtpServer(opts: SMTPServerOptions = {}): Promise<Smtp> {
  const mails: Mail[] = [];
  const reject = new Set<string>();
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    // The built-in test certificate is never used: every server gets the one made for this run.
    ...(tls ? { key: tls.key, cert: tls.cert } : { disabledCommands: ['STARTTLS'] }),
    onRcptTo(address, _session, cb) {
      if (reject.has(address.address)) {
        const err = new Error('mailbox unavailable') as Error & { responseCode: number };
        err.responseCode = 550;
        cb(err);
      } else cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const { headers, body } = parseMail(Buffer.concat(chunks).toString('utf8'));
        const env = session.envelope;
        mails.push({
          from: env.mailFrom ? env.mailFrom.address : '',
          to: env.rcptTo.map((a) => a.address),
          secure: session.secure,
          user: session.user,
          headers,
          body,
        });
        cb();
      });
    },
    ...opts,
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  cleanups.push(close);
  return { port, mails, reject, close };
}

/** Accepts TCP connections and never says anything (no SMTP greeting). */
async function silentServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// A self-signed certificate for 127.0.0.1, made with openssl for this run. The client trusts it
// by being given it as its CA (EmailOptions.tls / AlertEvaluatorOptions.smtpTls), never by
// switching verification off.
let tls: { key: string; cert: string } | undefined;
const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

beforeAll(() => {
  if (!hasOpenssl) return;
  const dir = tempDir('svc-smtp-tls-');
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  tls = { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
});

// ---------------------------------------------------------------- fixtures

const T0 = Date.parse('2024-05-01T12:00:00.000Z');

const smtp = (port: number, over: Partial<SmtpSettings> = {}): SmtpSettings => ({
  SMTP_HOST: '127.0.0.1',
  SMTP_PORT: port,
  SMTP_USER: '',
  SMTP_PASS: '',
  SMTP_TLS: false,
  SMTP_FROM: 'svc@noc.example.com',
  ...over,
});

const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  run_id: 'run-42',
  pipeline: 'ifstats',
  node_id: 'node-a',
  status: 'failed',
  started_at: '2024-05-01T11:58:00.000Z',
  finished_at: '2024-05-01T11:59:30.250Z',
  records_in: 200,
  records_out: 150,
  records_filtered: 0,
  records_skipped: 50,
  bytes_in: 10_000,
  bytes_out: 7_000,
  dlq_count: 3,
  error: 'sink local: disk full',
  errors: Array.from({ length: 15 }, (_, i) => `record ${i}: bad value`),
  ...over,
});

const rule = (over: Partial<AlertRule> = {}): AlertRule => ({
  name: 'failed-run',
  condition: 'failed or error_rate > 0.2',
  action: 'email',
  webhook_url: null,
  email_to: 'ops@example.com, noc@example.org',
  subject: null,
  cooldown_seconds: 900,
  ...over,
});

let store: Store;
let clock: number;
const warnings: { msg: string; [k: string]: unknown }[] = [];
const log = pino({ level: 'warn' }, { write: (s: string) => void warnings.push(JSON.parse(s)) });

beforeEach(async () => {
  store = await openStore({ path: ':memory:' });
  clock = T0;
  warnings.length = 0;
});
afterEach(async () => {
  await store.close();
});

const evaluator = (settings: SmtpSettings, over: Partial<AlertEvaluatorOptions> = {}) =>
  new AlertEvaluator({ store: store.alerts, settings, log, now: () => clock, timeouts: { emailMs: 5000 }, ...over });

// ---------------------------------------------------------------- deliverEmail

describe('deliverEmail, plain SMTP (SVC_SMTP_TLS=false)', () => {
  it('delivers; the server gets sender, recipients, subject and body', async () => {
    const server = await smtpServer({ disabledCommands: ['STARTTLS'] });
    const r = await deliverEmail(smtp(server.port), { to: 'a@example.com, b@example.com', subject: 'Hello', text: 'line one\nline two\n' });
    expect(r).toMatchObject({ ok: true, detail: expect.stringMatching(/^accepted for a@example.com, b@example.com: 250/) });
    expect(server.mails).toHaveLength(1);
    const m = server.mails[0]!;
    expect(m).toMatchObject({ from: 'svc@noc.example.com', to: ['a@example.com', 'b@example.com'], secure: false });
    expect(m.headers.subject).toBe('Hello');
    expect(m.headers.from).toBe('svc@noc.example.com');
    expect(m.headers.to).toBe('a@example.com, b@example.com');
    expect(m.headers['content-type']).toMatch(/^text\/plain/);
    expect(m.body).toBe('line one\nline two\n');
  });

  it('does not upgrade even when the server offers STARTTLS', async () => {
    const server = await smtpServer();
    expect((await deliverEmail(smtp(server.port), { to: ['a@example.com'], subject: 's', text: 't' })).ok).toBe(true);
    expect(server.mails[0]!.secure).toBe(false);
  });

  it('a rejected recipient (RCPT TO 550) is a failure, also when another one was accepted', async () => {
    const server = await smtpServer({ disabledCommands: ['STARTTLS'] });
    server.reject.add('gone@example.com');
    const only = await deliverEmail(smtp(server.port), { to: 'gone@example.com', subject: 's', text: 't' });
    expect(only.ok).toBe(false);
    expect(!only.ok && only.reason).toMatch(/^mail failed: .*550/);
    const partial = await deliverEmail(smtp(server.port), { to: 'ok@example.com, gone@example.com', subject: 's', text: 't' });
    expect(partial).toEqual({ ok: false, reason: 'rejected recipients: gone@example.com' });
  });

  it('AUTH with SVC_SMTP_USER / SVC_SMTP_PASS, checked by the server', async () => {
    const server = await smtpServer({
      disabledCommands: ['STARTTLS'],
      authOptional: false,
      allowInsecureAuth: true,
      onAuth(auth, _session, cb) {
        if (auth.username === 'alerts' && auth.password === 's3cret') cb(null, { user: 'alerts' });
        else cb(new Error('Invalid username or password'));
      },
    });
    const good = await deliverEmail(smtp(server.port, { SMTP_USER: 'alerts', SMTP_PASS: 's3cret' }), { to: 'a@example.com', subject: 's', text: 't' });
    expect(good.ok).toBe(true);
    expect(server.mails[0]!.user).toBe('alerts');

    const bad = await deliverEmail(smtp(server.port, { SMTP_USER: 'alerts', SMTP_PASS: 'wrong' }), { to: 'a@example.com', subject: 's', text: 't' });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.reason).toMatch(/^mail failed: .*(EAUTH|Invalid username or password)/);

    const none = await deliverEmail(smtp(server.port), { to: 'a@example.com', subject: 's', text: 't' });
    expect(none.ok).toBe(false);
    expect(!none.ok && none.reason).toMatch(/530|[Aa]uthentication/);
    expect(server.mails).toHaveLength(1);
  });

  it('a server that never greets is a timeout failure, within the timeout', async () => {
    const port = await silentServer();
    const t = Date.now();
    const r = await deliverEmail(smtp(port), { to: 'a@example.com', subject: 's', text: 't' }, { timeoutMs: 300 });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/timed out|timeout/i);
    expect(Date.now() - t).toBeLessThan(2000);
  });

  it('a refused connection is a failure', async () => {
    const r = await deliverEmail(smtp(await closedPort()), { to: 'a@example.com', subject: 's', text: 't' });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/ECONNREFUSED/);
  });

  it('no recipients: a failure without connecting', async () => {
    expect(await deliverEmail(smtp(1), { to: ' , ', subject: 's', text: 't' })).toEqual({ ok: false, reason: 'no recipients' });
  });
});

describe.skipIf(!hasOpenssl)('deliverEmail, STARTTLS (SVC_SMTP_TLS=true)', () => {
  // The server refuses mail (and AUTH) on a connection that was not upgraded.
  const tlsOnly = (): SMTPServerOptions => ({
    authOptional: false,
    allowInsecureAuth: false,
    onAuth(auth, session, cb) {
      if (!session.secure) cb(new Error('TLS first'));
      else if (auth.username === 'alerts' && auth.password === 's3cret') cb(null, { user: 'alerts' });
      else cb(new Error('Invalid username or password'));
    },
    onMailFrom(_address, session, cb) {
      cb(session.secure ? undefined : new Error('Must issue a STARTTLS command first'));
    },
  });
  const tlsSettings = (port: number) => smtp(port, { SMTP_TLS: true, SMTP_USER: 'alerts', SMTP_PASS: 's3cret' });

  it('upgrades, verifies the certificate against the given CA, authenticates and delivers', async () => {
    const server = await smtpServer(tlsOnly());
    const r = await deliverEmail(tlsSettings(server.port), { to: 'a@example.com', subject: 'Secure', text: 'over TLS' }, { tls: { ca: tls!.cert } });
    expect(r.ok).toBe(true);
    expect(server.mails).toEqual([expect.objectContaining({ secure: true, user: 'alerts', to: ['a@example.com'], body: 'over TLS\n' })]);
    expect(server.mails[0]!.headers.subject).toBe('Secure');
  });

  it('an untrusted certificate is a failure: verification is never switched off', async () => {
    const server = await smtpServer(tlsOnly());
    const r = await deliverEmail(tlsSettings(server.port), { to: 'a@example.com', subject: 's', text: 't' }, { tls: { rejectUnauthorized: false } });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/certificate/i);
    expect(server.mails).toHaveLength(0);
  });

  it('a server without STARTTLS is a failure: nothing is sent in the clear', async () => {
    let sawAuth = false;
    const server = await smtpServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      onAuth(_auth, _session, cb) {
        sawAuth = true;
        cb(null, { user: 'x' });
      },
    });
    const r = await deliverEmail(tlsSettings(server.port), { to: 'a@example.com', subject: 's', text: 't' }, { tls: { ca: tls!.cert } });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/STARTTLS|TLS/);
    expect(sawAuth).toBe(false);
    expect(server.mails).toHaveLength(0);
  });
});

// ---------------------------------------------------------------- evaluator

describe('AlertEvaluator with email', () => {
  it('mails the rule recipients with the default subject and the documented body', async () => {
    const server = await smtpServer({ disabledCommands: ['STARTTLS'] });
    await store.alerts.add('ifstats', rule());
    const out = await evaluator(smtp(server.port)).evaluate('ifstats', run());
    expect(out).toEqual([expect.objectContaining({ rule: 'failed-run', action: 'email', outcome: 'fired', fired_at: '2024-05-01T12:00:00.000Z' })]);
    expect(server.mails).toHaveLength(1);
    const m = server.mails[0]!;
    expect(m.to).toEqual(['ops@example.com', 'noc@example.org']);
    expect(m.from).toBe('svc@noc.example.com');
    expect(m.headers.subject).toBe('[svc] ifstats: failed-run');
    expect(m.body).toBe(
      [
        "Alert 'failed-run' fired for pipeline 'ifstats'.",
        '',
        'Condition: failed or error_rate > 0.2',
        'Fired at:  2024-05-01T12:00:00.000Z',
        'Cooldown:  900 s',
        '',
        'Variables',
        '  records_in:       200',
        '  records_out:      150',
        '  records_skipped:  50',
        '  error_rate:       0.25',
        '  status:           failed',
        '  failed:           true',
        '  duration_seconds: 90.25',
        '',
        'Run',
        '  run_id:      run-42',
        '  node_id:     node-a',
        '  status:      failed',
        '  started_at:  2024-05-01T11:58:00.000Z',
        '  finished_at: 2024-05-01T11:59:30.250Z',
        '  bytes_in:    10000',
        '  bytes_out:   7000',
        '  dlq_count:   3',
        '',
        'Run error: sink local: disk full',
        '',
        'Errors (first 10 of 15):',
        ...Array.from({ length: 10 }, (_, i) => `  - record ${i}: bad value`),
        '',
        '-- ',
        'Sent by svc alerting. Details: GET /api/runs/run-42',
        '',
      ].join('\n'),
    );
    expect(await store.alerts.lastFired('ifstats', 'failed-run')).toBe('2024-05-01T12:00:00.000Z');
  });

  it('uses the rule subject; a run without errors has no error section', async () => {
    const server = await smtpServer({ disabledCommands: ['STARTTLS'] });
    await store.alerts.add('ifstats', rule({ subject: 'ifstats is failing', email_to: 'ops@example.com' }));
    await evaluator(smtp(server.port)).evaluate('ifstats', run({ error: null, errors: [] }));
    expect(server.mails[0]!.headers.subject).toBe('ifstats is failing');
    expect(server.mails[0]!.body).not.toContain('Errors');
    expect(server.mails[0]!.body).not.toContain('Run error');
  });

  it('a rejected recipient does not start the cooldown; the next evaluation mails again', async () => {
    const server = await smtpServer({ disabledCommands: ['STARTTLS'] });
    server.reject.add('noc@example.org');
    await store.alerts.add('ifstats', rule());
    const ev = evaluator(smtp(server.port));
    const first = await ev.evaluate('ifstats', run());
    expect(first[0]).toMatchObject({ outcome: 'delivery-failed', reason: 'rejected recipients: noc@example.org' });
    expect(await store.alerts.lastFired('ifstats', 'failed-run')).toBeUndefined();
    expect(warnings).toEqual([expect.objectContaining({ msg: 'alert delivery failed; cooldown not started', target: 'ops@example.com, noc@example.org' })]);

    server.reject.clear();
    clock += 5000;
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    clock += 5000;
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('cooldown');
    expect(await store.alerts.lastFired('ifstats', 'failed-run')).toBe(new Date(T0 + 5000).toISOString());
  });

  it('an AUTH failure does not start the cooldown', async () => {
    const server = await smtpServer({
      disabledCommands: ['STARTTLS'],
      authOptional: false,
      allowInsecureAuth: true,
      onAuth: (_auth, _session, cb) => cb(new Error('Invalid username or password')),
    });
    await store.alerts.add('ifstats', rule());
    const ev = evaluator(smtp(server.port, { SMTP_USER: 'alerts', SMTP_PASS: 'nope' }));
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('delivery-failed');
    expect((await ev.evaluate('ifstats', run()))[0]!.outcome).toBe('delivery-failed');
    expect(await store.alerts.lastFired('ifstats', 'failed-run')).toBeUndefined();
  });

  it('an unreachable or silent mail server fails within the configured timeout, without cooldown', async () => {
    await store.alerts.add('ifstats', rule());
    const silent = await silentServer();
    const t = Date.now();
    const out = await evaluator(smtp(silent), { timeouts: { emailMs: 300 } }).evaluate('ifstats', run());
    expect(out[0]!.outcome).toBe('delivery-failed');
    expect(Date.now() - t).toBeLessThan(2500);
    expect((await evaluator(smtp(await closedPort())).evaluate('ifstats', run()))[0]!.outcome).toBe('delivery-failed');
    expect(await store.alerts.lastFired('ifstats', 'failed-run')).toBeUndefined();
  });

  it.skipIf(!hasOpenssl)('STARTTLS through the evaluator (smtpTls: the test CA)', async () => {
    const server = await smtpServer({
      authOptional: false,
      onAuth: (auth, session, cb) => (session.secure && auth.password === 's3cret' ? cb(null, { user: auth.username }) : cb(new Error('no'))),
    });
    await store.alerts.add('ifstats', rule({ email_to: 'ops@example.com' }));
    const settings = smtp(server.port, { SMTP_TLS: true, SMTP_USER: 'alerts', SMTP_PASS: 's3cret' });
    expect((await evaluator(settings, { smtpTls: { ca: tls!.cert } }).evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    expect(server.mails).toEqual([expect.objectContaining({ secure: true, user: 'alerts' })]);
  });

  it('the cooldown of a mail rule survives a restart (database file reopened)', async () => {
    const server = await smtpServer({ disabledCommands: ['STARTTLS'] });
    const path = join(tempDir('svc-alerts-'), 'svc.db');
    const first = await openStore({ path });
    try {
      await first.alerts.add('ifstats', rule());
      expect((await evaluator(smtp(server.port), { store: first.alerts }).evaluate('ifstats', run()))[0]!.outcome).toBe('fired');
    } finally {
      await first.close();
    }
    const second = await openStore({ path });
    try {
      clock = T0 + 899_000;
      expect((await evaluator(smtp(server.port), { store: second.alerts }).evaluate('ifstats', run()))[0]).toMatchObject({
        outcome: 'cooldown',
        cooldown_until: '2024-05-01T12:15:00.000Z',
      });
    } finally {
      await second.close();
    }
    expect(server.mails).toHaveLength(1);
  });
});
