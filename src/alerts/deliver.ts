// Delivery of an alert: a JSON POST to a webhook, or a mail through the SVC_SMTP_* server. Each
// returns whether the peer confirmed it; only a confirmed delivery starts a rule's cooldown.
// Neither throws and neither takes longer than its timeout (plus a few milliseconds).
import type { ConnectionOptions } from 'node:tls';
import type { Settings } from '../settings.js';
import { redactUrl, SECRET_PARAM } from '../util/redact-url.js';

export type DeliveryResult = { ok: true; detail: string } | { ok: false; reason: string };

/** Default whole-request limit of a webhook POST. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** Default limit of one mail submission (connect, greeting, TLS, auth, envelope, data). */
export const EMAIL_TIMEOUT_MS = 15_000;
/** At most this much of a response body is quoted in a failure reason. */
const SNIPPET_BYTES = 300;

const errorText = (e: unknown): string => {
  if (!(e instanceof Error)) return String(e);
  // fetch() wraps socket errors: TypeError('fetch failed') with the real error as `cause`.
  const cause = (e as Error & { cause?: unknown }).cause;
  if (cause instanceof Error) return errorText(cause);
  const code = (e as Error & { code?: unknown }).code;
  return typeof code === 'string' && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
};

/** A URL for logs, reasons and the delivery history (src/util/redact-url.ts, shared with the web UI). */
export { redactUrl };

const safeDecode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/**
 * The secrets a webhook URL carries, to be masked in any text about its delivery (a peer may quote
 * them back in a body): the password (or the user when it is the only credential, as tokens are
 * sent) and the values of secret query parameters, as written and decoded.
 */
export function urlSecrets(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const raw = [u.password || u.username, ...[...u.searchParams].filter(([k]) => SECRET_PARAM.test(k)).map(([, v]) => v)];
  const out = new Set<string>();
  // The Authorization header deliverWebhook makes of them, should a peer echo it.
  if (u.username || u.password) out.add(Buffer.from(`${safeDecode(u.username)}:${safeDecode(u.password)}`).toString('base64'));
  for (const s of raw) {
    if (!s) continue;
    out.add(s);
    out.add(safeDecode(s));
    out.add(encodeURIComponent(s));
  }
  return [...out];
}

/** Reads at most `max` bytes of a body as text and drops the rest. */
async function snippet(res: Response, max = SNIPPET_BYTES): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // A body that breaks off changes nothing about the status.
  } finally {
    reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).subarray(0, max).toString('utf8').replace(/\s+/g, ' ').trim();
  return size > max ? `${text}...` : text;
}

/**
 * POSTs `payload` as JSON to `url`. Success only on a 2xx status. Any other status (3xx: redirects
 * are not followed; 4xx; 5xx), a connection error and the timeout (`timeoutMs`, default 10 s, for
 * the whole request) are failures. User and password in the URL are sent as Basic authorization.
 */
export async function deliverWebhook(url: string, payload: unknown, opts: { timeoutMs?: number } = {}): Promise<DeliveryResult> {
  const timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { ok: false, reason: 'invalid webhook URL' };
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return { ok: false, reason: `unsupported URL scheme ${target.protocol}` };
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'svc-alerts' };
  if (target.username || target.password) {
    const user = decodeURIComponent(target.username);
    const pass = decodeURIComponent(target.password);
    headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  let body: string;
  try {
    body = JSON.stringify(payload);
  } catch (e) {
    return { ok: false, reason: `payload is not serializable: ${errorText(e)}` };
  }

  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  try {
    const res = await fetch(target, { method: 'POST', headers, body, redirect: 'manual', signal: ac.signal });
    const text = await snippet(res);
    const status = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
    if (res.status >= 200 && res.status < 300) return { ok: true, detail: status };
    return { ok: false, reason: text ? `${status}: ${text}` : status };
  } catch (e) {
    if (ac.signal.aborted) return { ok: false, reason: `timed out after ${timeoutMs} ms` };
    return { ok: false, reason: `connection failed: ${errorText(e)}` };
  } finally {
    clearTimeout(timer);
  }
}

export type SmtpSettings = Pick<Settings, 'SMTP_HOST' | 'SMTP_PORT' | 'SMTP_USER' | 'SMTP_PASS' | 'SMTP_TLS' | 'SMTP_FROM'>;

export interface EmailMessage {
  /** One address, a comma-separated list or a list. */
  to: string | string[];
  subject: string;
  text: string;
}

export interface EmailOptions {
  /** Whole submission limit, default 15 s. */
  timeoutMs?: number;
  /**
   * Extra TLS options for STARTTLS (e.g. `ca` for a private CA). Certificates are always verified;
   * the default trust store is Node's (extend it with NODE_EXTRA_CA_CERTS).
   */
  tls?: ConnectionOptions;
}

/**
 * Sends a plain-text mail through SVC_SMTP_HOST:SVC_SMTP_PORT. SVC_SMTP_TLS true: STARTTLS is
 * required (no mail, and no password, goes out unencrypted); false: plain SMTP, STARTTLS is not
 * attempted. SVC_SMTP_USER/PASS: AUTH when the user is set. Success only when the server accepted
 * the message for every recipient.
 */
export async function deliverEmail(settings: SmtpSettings, msg: EmailMessage, opts: EmailOptions = {}): Promise<DeliveryResult> {
  const timeoutMs = opts.timeoutMs ?? EMAIL_TIMEOUT_MS;
  const to = (Array.isArray(msg.to) ? msg.to : msg.to.split(',')).map((s) => s.trim()).filter(Boolean);
  if (to.length === 0) return { ok: false, reason: 'no recipients' };

  const tlsOn = settings.SMTP_TLS;
  // Loaded on the first mail, not with the daemon (issue 18: start-up time).
  const nodemailer = (await import('nodemailer')).default;
  const transport = nodemailer.createTransport({
    host: settings.SMTP_HOST,
    port: settings.SMTP_PORT,
    secure: false,
    requireTLS: tlsOn,
    ignoreTLS: !tlsOn,
    auth: settings.SMTP_USER ? { user: settings.SMTP_USER, pass: settings.SMTP_PASS } : undefined,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
    socketCloseTimeout: 0,
    tls: { ...opts.tls, rejectUnauthorized: true },
    disableFileAccess: true,
    disableUrlAccess: true,
  });

  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<DeliveryResult>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: `timed out after ${timeoutMs} ms` }), timeoutMs);
  });
  const send = (async (): Promise<DeliveryResult> => {
    try {
      const info = await transport.sendMail({ from: settings.SMTP_FROM, to, subject: msg.subject, text: msg.text });
      const accepted = (info.accepted ?? []).map(String);
      const rejected = (info.rejected ?? []).map(String);
      if (accepted.length > 0 && rejected.length === 0)
        return { ok: true, detail: `accepted for ${accepted.join(', ')}: ${String(info.response ?? '').trim()}` };
      if (accepted.length === 0) return { ok: false, reason: `no recipient accepted: ${String(info.response ?? '').trim()}` };
      return { ok: false, reason: `rejected recipients: ${rejected.join(', ')}` };
    } catch (e) {
      // nodemailer's own step timeouts equal the deadline; whichever fires first, the reason says the same.
      if ((e as NodeJS.ErrnoException).code === 'ETIMEDOUT') return { ok: false, reason: `timed out after ${timeoutMs} ms (${errorText(e)})` };
      return { ok: false, reason: `mail failed: ${errorText(e)}` };
    }
  })();
  try {
    // The socket timeouts bound each step; the deadline bounds the whole submission.
    return await Promise.race([send, deadline]);
  } finally {
    clearTimeout(timer);
    transport.close();
  }
}
