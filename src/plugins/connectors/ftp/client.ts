// What the ftp source and sink share: the server fields (host, port, credentials, passive, FTPS), a
// logged-in basic-ftp 6 client that resolves every path against the login directory (so changing
// directory never moves a relative path), the lazily opened connection of a run, and errors that
// say what to fix. basic-ftp speaks passive mode only (EPSV, then PASV), which is why `passive:
// false` is refused, and it forces data connections to the control host (safe behind NAT).
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { Client, FTPError } from 'basic-ftp';
import { errorMessage, WriteError } from '../../../core/errors.js';
import { Connection } from '../../connector-runtime/connection.js';
import { lazyModule } from '../../connector-runtime/lazy.js';
import type { LintIssue, PluginContext } from '../../types.js';

const basicFtp = lazyModule(() => import('basic-ftp'));

/** A reply of the server (basic-ftp's FTPError). */
const isFtpError = (e: unknown): e is FTPError => basicFtp.loaded !== undefined && e instanceof basicFtp.loaded.FTPError;

/**
 * Milliseconds basic-ftp waits for the server: connect, each command's answer, and a data transfer
 * that makes no progress while we are ready for it (our own backpressure does not count).
 */
export const TIMEOUT_MS = 30_000;

export const serverFields = {
  host: Type.String({ minLength: 1, description: 'FTP server host name or IP address.' }),
  port: Type.Integer({ minimum: 1, maximum: 65535, default: 21, description: 'FTP control port.' }),
  username: Type.String({ minLength: 1, description: 'Login name.' }),
  password: Type.String({ writeOnly: true, description: 'Password of `username`; masked in every message.' }),
};

export const transportFields = {
  passive: Type.Boolean({
    default: true,
    description: 'Passive mode: the client opens the data connections (EPSV, then PASV). Active mode (PORT) is not supported, so false is refused.',
  }),
  secure: Type.Boolean({
    default: false,
    description:
      'Explicit FTPS (AUTH TLS on the control port): control and data connections are encrypted (PROT P) and the server certificate is verified against `tls_ca_certs` (or the system CAs) and the host name.',
  }),
  tls_ca_certs: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'PEM file with the CA certificate(s) that signed the server certificate (with `secure: true`); none: the system CAs.',
    }),
  ),
};

export interface FtpServer {
  host: string;
  port: number;
  username: string;
  password: string;
  passive: boolean;
  secure: boolean;
  tls_ca_certs?: string;
}

export const serverAddress = (c: Pick<FtpServer, 'host' | 'port'>) => (isIP(c.host) === 6 ? `[${c.host}]:${c.port}` : `${c.host}:${c.port}`);

/** Lint shared by source and sink. */
export function lintServer(c: FtpServer): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.passive === false) {
    issues.push({
      path: 'passive',
      message: 'active mode (PORT) is not supported: the FTP client (basic-ftp) connects in passive mode only; remove passive or set it to true',
    });
  }
  if (c.tls_ca_certs && !c.secure) issues.push({ path: 'tls_ca_certs', message: 'applies with secure: true only' });
  return issues;
}

/** A directory path as written in the config, for comparing two of them (not resolved at the server). */
export const sameRemoteDir = (a: string, b: string) => path.posix.normalize(`${a}/`) === path.posix.normalize(`${b}/`);

/** One logged-in control connection and the directory the login put it in. */
export class FtpSession {
  constructor(
    readonly client: Client,
    readonly home: string,
  ) {}

  get closed(): boolean {
    return this.client.closed;
  }

  /** `p` as an absolute path at the server (relative paths start at the login directory). */
  abs(p: string): string {
    return path.posix.resolve(this.home, p);
  }

  /** Makes `dir` and its missing parents (MKD), then checks it is a directory one can enter. */
  async mkdirs(dir: string): Promise<void> {
    const target = this.abs(dir);
    if (await this.isDir(target)) return;
    let at = '/';
    for (const part of target.split('/').filter(Boolean)) {
      at = path.posix.join(at, part);
      await this.client.sendIgnoringError(`MKD ${at}`);
    }
    await this.client.cd(target);
  }

  async isDir(dir: string): Promise<boolean> {
    try {
      await this.client.cd(this.abs(dir));
      return true;
    } catch (e) {
      if (isFtpError(e)) return false;
      throw e;
    }
  }

  /** Uploads `buf` to `file`: STOR, or APPE when `append`. */
  async put(file: string, buf: Buffer, append = false): Promise<void> {
    const source = Readable.from(buf.length > 0 ? [buf] : []);
    if (append) await this.client.appendFrom(source, this.abs(file));
    else await this.client.uploadFrom(source, this.abs(file));
  }

  close(): void {
    this.client.close();
  }
}

/** Connects, upgrades to TLS (secure), logs in and learns the login directory. `signal` aborts it. */
export async function connectFtp(c: FtpServer, signal?: AbortSignal): Promise<FtpSession> {
  signal?.throwIfAborted();
  let ca: Buffer | undefined;
  if (c.secure && c.tls_ca_certs) {
    try {
      ca = await readFile(c.tls_ca_certs);
    } catch (e) {
      throw new Error(`cannot read tls_ca_certs '${c.tls_ca_certs}': ${(e as NodeJS.ErrnoException).code ?? errorMessage(e)}`, { cause: e });
    }
  }
  const { Client } = await basicFtp();
  const client = new Client(TIMEOUT_MS);
  const abort = () => client.close();
  signal?.addEventListener('abort', abort, { once: true });
  try {
    await client.access({
      host: c.host,
      port: c.port,
      user: c.username,
      password: c.password,
      secure: c.secure,
      secureOptions: c.secure ? { ca, servername: isIP(c.host) ? undefined : c.host } : undefined,
    });
    return new FtpSession(client, await client.pwd());
  } catch (e) {
    client.close();
    throw describeConnectError(e, c);
  } finally {
    signal?.removeEventListener('abort', abort);
  }
}

/** An error's message on one line (FTP replies can span several: `421-...\n421 ...`). */
export const oneLine = (e: unknown) => errorMessage(e).replace(/\s*[\r\n]+\s*/g, ' ');

/** A failed connect or login, said in terms of the config (never with the password). */
export function describeConnectError(e: unknown, c: FtpServer): Error {
  const at = serverAddress(c);
  const err = e as Error & { code?: string | number };
  const text = oneLine(e);
  if (isFtpError(e)) {
    if (err.code === 530) return new Error(`${at} refused the login of '${c.username}' (${text}): check username and password`, { cause: e });
    if (/AUTH/i.test(text) || err.code === 500 || err.code === 502 || err.code === 504 || err.code === 534) {
      if (c.secure)
        return new Error(`${at} refused FTPS (${text}): the server offers no explicit TLS; set secure: false or enable TLS on the server`, { cause: e });
    }
    if (!c.secure && err.code === 421) return new Error(`${at} refused the session (${text}): if it requires TLS, set secure: true`, { cause: e });
    return new Error(`${at}: ${text}`, { cause: e });
  }
  const code = typeof err.code === 'string' ? err.code : '';
  if (code === 'ECONNREFUSED') return new Error(`cannot connect to ${at}: connection refused (is the FTP server running, is the port right?)`, { cause: e });
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new Error(`cannot resolve host '${c.host}'`, { cause: e });
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return new Error(`cannot reach ${at}: ${code}`, { cause: e });
  if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|ERR_SSL|HOSTNAME|ALTNAME/.test(code) || /certificate|ssl|tls/i.test(text)) {
    const hint = /HOSTNAME|ALTNAME/.test(code)
      ? 'the certificate does not name this host'
      : c.tls_ca_certs
        ? `is ${c.tls_ca_certs} the CA that signed the server certificate?`
        : 'set tls_ca_certs to the CA that signed the server certificate';
    return new Error(`TLS with ${at} failed: ${text} (${hint})`, { cause: e });
  }
  if (/^Timeout/.test(text))
    return new Error(
      `no answer from ${at} within ${TIMEOUT_MS / 1000} s (is it an FTP server?${c.secure ? ' is it an implicit-TLS port? only explicit TLS is supported' : ''})`,
      { cause: e },
    );
  return new Error(`${at}: ${text}`, { cause: e });
}

/** True when the server answered (an FTP reply code): the connection itself is fine. */
export const isReply = isFtpError;

/** True for a 5xx reply: the server refused for good (permissions, a bad name); retrying cannot help. */
export const isPermanent = (e: unknown) => isFtpError(e) && e.code >= 500;

/**
 * The connection of a run, opened at first use (states logged and counted as `ftp`). A connection
 * the server closed while idle is noticed before the next use and opened again, so it costs no
 * failed attempt. `telemetry` false: a helper connection whose states are logged only.
 */
export class FtpLink {
  private readonly link: Connection<FtpSession>;

  constructor(c: FtpServer, ctx: Pick<PluginContext, 'log' | 'telemetry' | 'redact'>, opts: { telemetry?: boolean; signal?: AbortSignal } = {}) {
    const reporting = opts.telemetry === false ? { log: ctx.log, redact: ctx.redact } : ctx;
    this.link = new Connection<FtpSession>(
      reporting,
      'ftp',
      () => connectFtp(c, opts.signal),
      async (s) => s.close(),
    );
  }

  /** A live session; a failed connect is a retryable WriteError (`ftp: cannot connect: ...`). */
  async get(): Promise<FtpSession> {
    const s = await this.link.get();
    if (!s.closed) return s;
    this.link.drop(s, new Error('the server closed the connection'));
    return this.link.get();
  }

  /**
   * Runs `op` on a live session. A reply error leaves the connection open; any other failure drops
   * it so that the next use reconnects. Errors become WriteErrors: a 5xx reply (or a WriteError
   * `op` threw that way) is not retryable.
   */
  async use<R>(op: (s: FtpSession) => Promise<R>): Promise<R> {
    await this.get();
    return this.link.use(
      async (s) => {
        try {
          return await op(s);
        } catch (e) {
          if (isPermanent(e)) throw new WriteError(`ftp: ${oneLine(e)}`, false, { cause: e });
          throw e;
        }
      },
      (e) => !isReply(e),
    );
  }

  /** Forgets `s` after a failure that left it in an unknown state (a transfer cut short). */
  drop(s: FtpSession, why: Error): void {
    this.link.drop(s, why);
  }

  end(): Promise<void> {
    return this.link.end();
  }
}

/**
 * The reachability check of source and sink: connect and log in (TLS when secure), then `op` on the
 * session (a cheap command), then QUIT. Bounded by the caller's signal.
 */
export async function checkFtp(c: FtpServer, signal: AbortSignal, op: (s: FtpSession) => Promise<void>): Promise<void> {
  const s = await connectFtp(c, signal);
  const abort = () => s.close();
  signal.addEventListener('abort', abort, { once: true });
  try {
    await op(s);
  } finally {
    signal.removeEventListener('abort', abort);
    s.close();
  }
}
