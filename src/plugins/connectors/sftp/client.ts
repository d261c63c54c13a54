// What the sftp source and sink share: the server, login and host-key fields, the connection
// (ssh2-sftp-client 12.1.1 over ssh2), errors that say what to fix, and the file operations both
// need on ssh2's SFTP channel: pipelined reads and writes (several requests in flight, as OpenSSH's
// own client does), directories created as needed, renames and fsync through the OpenSSH
// extensions when the server offers them.
import fs from 'node:fs/promises';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type SftpClient from 'ssh2-sftp-client';
import type { ConnectOptions, SFTPWrapper, SftpStatusError, Stats } from 'ssh2-sftp-client';
import { defaultStateDir } from '../../connector-runtime/processed-files.js';
import { errorMessage } from '../../../core/errors.js';
import { secret } from '../../../core/secrets.js';
import { once } from '../../connector-runtime/lazy.js';
import type { Logger } from '../../../observability/log.js';
import type { LintIssue, PluginContext } from '../../types.js';
import { preferredAlgorithms, verifyHostKey, type HostKeyCheck, type HostKeyPolicy, type Verdict } from './host-keys.js';

/** Until the SSH handshake and login are done. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Keepalives every 10 s, 3 unanswered ones close the connection: a hung server cannot stall a run. */
const KEEPALIVE_MS = 10_000;
const KEEPALIVE_MAX = 3;

/** Requests in flight per file: reads (the source) and writes (the sink). */
export const READ_DEPTH = 128;
export const WRITE_DEPTH = 16;
/**
 * The data of one read: its answer (13 bytes of SFTP header, then the data) fits in one SSH channel
 * packet of the 32 KiB ssh2 announces, so ssh2 hands it over where it decrypted it. A larger
 * answer spans packets, and ssh2 first assembles it in a buffer of its own: one more copy of every
 * byte, and garbage that made V8 collect three times as often. 1.15 GB of 5 MB files on loopback:
 * 128 reads of 32,755 bytes in flight 184-187 MB/s and 5.5-5.9 CPU s; 32 of 256 KiB 140-158 MB/s and 7.0-7.4 CPU s.
 */
const READ_LEN = 32 * 1024 - 13;
/** Files up to this size are read into one buffer of their size (see readStream). */
const ONE_BUFFER_MAX = 16 * 1024 * 1024;
/** The receive window granted to the server (see widenWindow). */
const READ_WINDOW = 16 * 1024 * 1024;
/** Largest request; smaller when the server says so (OpenSSH's limits@openssh.com). */
const MAX_REQUEST = 256 * 1024;

/** SFTP status codes (draft-ietf-secsh-filexfer-02). */
export const STATUS = { EOF: 1, NO_SUCH_FILE: 2, PERMISSION_DENIED: 3, FAILURE: 4, OP_UNSUPPORTED: 8 } as const;

/** ssh2's open flags (SSH_FXF_*). */
const FLAG = { READ: 0x01, WRITE: 0x02, CREAT: 0x08, EXCL: 0x20 } as const;

export const serverFields = {
  host: Type.String({ minLength: 1, description: 'SFTP server host name or address.' }),
  port: Type.Integer({ minimum: 1, maximum: 65535, default: 22, description: 'SSH port.' }),
  username: Type.String({ minLength: 1, description: 'Login user.' }),
  password: secret('Password (SSH password authentication); or use private_key_path.'),
  private_key_path: Type.Optional(
    Type.String({ minLength: 1, description: 'Private key file for public-key authentication (OpenSSH or PEM format: ed25519, ECDSA, RSA).' }),
  ),
  private_key_passphrase: secret('Passphrase of an encrypted private_key_path. Our extension of doc 3.'),
  host_key_check: Type.Union([Type.Literal('accept-new'), Type.Literal('strict'), Type.Literal('off')], {
    default: 'accept-new',
    description:
      'accept-new: a server seen for the first time is accepted, logged and remembered in known_hosts, and a known server that offers another key is refused; strict: only keys already in known_hosts; off: any key (no protection against interception). Our extension of doc 3.',
  }),
  known_hosts: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "known_hosts file (OpenSSH format) checked and, under accept-new, appended to. Default: known_hosts in the state directory (the daemon's: SVC_STATE_DIR, else state/ beside its database; `svc run`: SVC_STATE_DIR, else ~/.svc/state). Our extension of doc 3.",
    }),
  ),
  host_key_fingerprint: Type.Optional(
    Type.String({
      pattern: '^(SHA256:)?[A-Za-z0-9+/]{43}=?$',
      description: 'Pin the server key: its SHA256 fingerprint as ssh-keygen -l prints it (SHA256:...); known_hosts is then not used. Our extension of doc 3.',
    }),
  ),
};

export interface SftpServer {
  host: string;
  port: number;
  username: string;
  password?: string;
  private_key_path?: string;
  private_key_passphrase?: string;
  host_key_check: HostKeyCheck;
  known_hosts?: string;
  host_key_fingerprint?: string;
}

/** Cross-field rules of the server fields (source and sink). */
export function lintServer(c: Partial<SftpServer>): LintIssue[] {
  const issues: LintIssue[] = [];
  if (c.password === undefined && c.private_key_path === undefined) issues.push({ path: 'password', message: 'set password or private_key_path' });
  if (c.private_key_passphrase !== undefined && c.private_key_path === undefined)
    issues.push({ path: 'private_key_passphrase', message: 'private_key_passphrase needs private_key_path' });
  if (c.host_key_fingerprint !== undefined && c.host_key_check === 'off')
    issues.push({ path: 'host_key_fingerprint', message: 'host_key_check off accepts any key; remove host_key_fingerprint or the off' });
  if (c.host_key_fingerprint !== undefined && c.known_hosts !== undefined)
    issues.push({ path: 'known_hosts', message: 'host_key_fingerprint pins the key and known_hosts is not read; keep one of them' });
  return issues;
}

/** Where accepted host keys are remembered: `known_hosts`, else known_hosts in the state directory. */
export function hostKeyPolicy(c: SftpServer, ctx: Pick<PluginContext, 'services'> | undefined, record: boolean): HostKeyPolicy {
  return {
    check: c.host_key_check ?? 'accept-new',
    file: c.known_hosts ?? path.join(ctx?.services?.stateDir ?? defaultStateDir(), 'known_hosts'),
    fingerprint: c.host_key_fingerprint,
    record,
  };
}

export const serverName = (c: Pick<SftpServer, 'host' | 'port'>) => `${c.host}:${c.port ?? 22}`;

/** An open SFTP session. */
export interface Session {
  client: SftpClient;
  sftp: SFTPWrapper;
  /** Why the session ended, once it has. */
  closed?: string;
  /** Largest read and write request this server takes. */
  readLen: number;
  writeLen: number;
}

/** True when the server answered with an SFTP status (the connection itself is fine). */
export const isStatusError = (e: unknown): e is SftpStatusError & { code: number } => e instanceof Error && typeof (e as SftpStatusError).code === 'number';
export const statusOf = (e: unknown): number | undefined => (isStatusError(e) ? e.code : undefined);

/** An SFTP status as words. */
export function statusText(e: unknown): string {
  switch (statusOf(e)) {
    case STATUS.NO_SUCH_FILE:
      return 'no such file or directory';
    case STATUS.PERMISSION_DENIED:
      return 'permission denied';
    case STATUS.OP_UNSUPPORTED:
      return 'operation not supported by the server';
    default:
      return errorMessage(e);
  }
}

/**
 * Calls an ssh2 SFTP method of an open session with a node-style callback. A request made after
 * the channel closed would never be answered (ssh2 queues it): it fails at once instead.
 */
export function call<T = void>(s: Session, fn: (cb: (err: SftpStatusError | undefined | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (s.closed) return reject(new Error(s.closed));
    try {
      fn((err, value) => (err ? reject(err) : resolve(value)));
    } catch (e) {
      reject(e as Error); // an extension the server does not offer throws at once
    }
  });
}

const sftpClientClass = once(async () => (await import('ssh2-sftp-client')).default);

/**
 * Opens an SFTP session: reads the private key, checks the host key under `policy`, logs in.
 * `lost` is called when an open session ends by itself. Errors say what to fix, without secrets.
 */
export async function connectSftp(c: SftpServer, opts: { policy: HostKeyPolicy; log: Logger; lost?: (err: Error) => void }): Promise<Session> {
  const where = serverName(c);
  let privateKey: Buffer | undefined;
  if (c.private_key_path !== undefined) {
    try {
      privateKey = await fs.readFile(c.private_key_path);
    } catch (e) {
      throw new Error(`cannot read private_key_path ${c.private_key_path}: ${errorMessage(e)}`, { cause: e });
    }
  }
  const prefer = await preferredAlgorithms(opts.policy, c.host, c.port);
  let verdict: Verdict | undefined;
  let hostKeyError: Error | undefined;
  let ready = false;
  const ended = (err: Error) => {
    if (ready) opts.lost?.(err);
  };
  const Sftp = await sftpClientClass();
  const client = new Sftp('svc', {
    error: (e) => ended(e),
    end: () => ended(new Error(`${where} ended the connection`)),
    close: () => ended(new Error(`connection to ${where} closed`)),
  });
  const options: ConnectOptions = {
    host: c.host,
    port: c.port,
    username: c.username,
    password: c.password,
    privateKey,
    passphrase: c.private_key_passphrase,
    readyTimeout: CONNECT_TIMEOUT_MS,
    keepaliveInterval: KEEPALIVE_MS,
    keepaliveCountMax: KEEPALIVE_MAX,
    tryKeyboard: false,
    ...(prefer.length ? { algorithms: { serverHostKey: { prepend: prefer } } } : {}),
    hostVerifier: (key, verify) => {
      verifyHostKey(opts.policy, c.host, c.port, key).then(
        (v) => {
          verdict = v;
          if (v.ok && v.added)
            opts.log.warn(
              { host: where, key: v.added, known_hosts: opts.policy.file },
              `sftp: first connection to ${where}: host key ${v.added} accepted and added to ${opts.policy.file}`,
            );
          verify(v.ok);
        },
        (e: unknown) => {
          hostKeyError = e as Error;
          verify(false);
        },
      );
    },
  };
  let sftp: SFTPWrapper;
  try {
    sftp = await client.connect(options);
  } catch (e) {
    client.client.destroy();
    if (hostKeyError) throw new Error(`cannot check the host key of ${where}: ${errorMessage(hostKeyError)}`, { cause: e });
    if (verdict && !verdict.ok) throw new Error(`refused to connect: ${verdict.reason}`, { cause: e });
    throw new Error(connectMessage(c, e), { cause: e });
  }
  ready = true;
  // OpenSSH announces its request limits; ssh2 splits larger requests into sequential ones.
  const internal = sftp as unknown as { _maxReadLen?: number; _maxWriteLen?: number };
  const session: Session = {
    client,
    sftp,
    readLen: Math.min(READ_LEN, internal._maxReadLen ?? READ_LEN),
    writeLen: Math.min(MAX_REQUEST, internal._maxWriteLen ?? 32 * 1024),
  };
  widenWindow(session);
  const closed = (why: string) => () => void (session.closed ??= why);
  sftp.on('close', closed(`SFTP channel to ${where} closed`));
  // A protocol error closes the channel; without a listener it would be thrown as an uncaught error.
  sftp.on('error', (e: Error) => void (session.closed ??= `SFTP channel to ${where} failed: ${e.message}`));
  client.client.on('close', closed(`connection to ${where} closed`));
  return session;
}

/** What went wrong connecting, in the user's terms. */
function connectMessage(c: SftpServer, e: unknown): string {
  const where = serverName(c);
  const msg = errorMessage(e).replace(/^[\w.]+: /, '');
  const code = (e as { code?: string }).code;
  if (/authentication methods failed/i.test(msg)) {
    const how = c.private_key_path !== undefined ? (c.password !== undefined ? 'password and private key' : `private key ${c.private_key_path}`) : 'password';
    return `authentication failed for user ${c.username} at ${where} (${how} refused); check username, password or private_key_path`;
  }
  if (code === 'ECONNREFUSED' || /refused connection/i.test(msg)) return `cannot connect to ${where}: connection refused (is an SSH server listening there?)`;
  if (code === 'ENOTFOUND' || /lookup failed/i.test(msg)) return `cannot connect to ${where}: host name not found`;
  if (/timed out/i.test(msg)) return `cannot connect to ${where}: no SSH handshake within ${CONNECT_TIMEOUT_MS / 1000} s`;
  if (/privateKey|passphrase|private key/i.test(msg)) return `cannot use private_key_path ${c.private_key_path}: ${msg}`;
  return `cannot connect to ${where}: ${msg}`;
}

/** Ends a session quietly. */
export async function endSession(s: Session): Promise<void> {
  await Promise.race([s.client.end().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
  s.client.client.destroy();
}

export const stat = (s: Session, p: string) => call<Stats>(s, (cb) => s.sftp.stat(p, cb));
export const lstat = (s: Session, p: string) => call<Stats>(s, (cb) => s.sftp.lstat(p, cb));

/** lstat, or undefined when nothing is there. */
export async function lstatOrNone(s: Session, p: string): Promise<Stats | undefined> {
  try {
    return await lstat(s, p);
  } catch (e) {
    if (statusOf(e) === STATUS.NO_SUCH_FILE) return undefined;
    throw e;
  }
}

/** Creates `dir` and its missing parents. */
export async function mkdirs(s: Session, dir: string): Promise<void> {
  if (dir === '' || dir === '.' || dir === '/') return;
  const st = await lstatOrNone(s, dir);
  if (st) {
    if (!st.isDirectory()) throw new Error(`${dir} exists and is not a directory`);
    return;
  }
  await mkdirs(s, path.posix.dirname(dir));
  try {
    await call(s, (cb) => s.sftp.mkdir(dir, cb));
  } catch (e) {
    if (!(await lstatOrNone(s, dir))?.isDirectory()) throw e; // not created concurrently by someone else
  }
}

const offers = (s: Session, ext: string) => s.sftp._extensions?.[ext] === '1';

/** Renames over an existing `to` atomically (posix-rename@openssh.com); a plain SFTP rename where the server lacks it. */
export function replacingRename(s: Session, from: string, to: string): Promise<void> {
  if (offers(s, 'posix-rename@openssh.com')) return call(s, (cb) => s.sftp.ext_openssh_rename(from, to, cb));
  return call(s, (cb) => s.sftp.rename(from, to, cb));
}

/** SFTP v3 rename: fails when `to` exists. */
export const plainRename = (s: Session, from: string, to: string) => call(s, (cb) => s.sftp.rename(from, to, cb));

export const unlink = (s: Session, p: string) => call(s, (cb) => s.sftp.unlink(p, cb));

export const openFile = (s: Session, p: string, flags: 'read' | 'append' | 'update' | 'new') =>
  call<Buffer>(s, (cb) =>
    s.sftp.open(
      p,
      { read: FLAG.READ, append: FLAG.READ | FLAG.WRITE | FLAG.CREAT, update: FLAG.READ | FLAG.WRITE, new: FLAG.READ | FLAG.WRITE | FLAG.CREAT | FLAG.EXCL }[
        flags
      ],
      cb,
    ),
  );
export const closeFile = (s: Session, h: Buffer) => call(s, (cb) => s.sftp.close(h, cb));
export const fstat = (s: Session, h: Buffer) => call<Stats>(s, (cb) => s.sftp.fstat(h, cb));
/** Sets the file's size (SETSTAT size): cuts it. */
export const ftruncate = (s: Session, h: Buffer, size: number) => call(s, (cb) => s.sftp.fsetstat(h, { size }, cb));
/** fsync@openssh.com where offered; elsewhere the server's acknowledgement of each write is all there is. */
export async function fsyncFile(s: Session, h: Buffer): Promise<void> {
  if (offers(s, 'fsync@openssh.com')) await call(s, (cb) => s.sftp.ext_openssh_fsync(h, cb));
}

/**
 * ssh2 opens the SFTP channel with a fixed 2 MiB receive window and tops it up to no more than
 * that, so the server stops after every 2 MiB until our window adjustment reaches it; on a busy
 * machine or a long link that waiting dominates (measured on loopback with 32 reads of 255 KiB in
 * flight: 70-105 MB/s with ssh2's window, 130-175 MB/s with this one). Here the server is granted
 * READ_WINDOW: the same CHANNEL_WINDOW_ADJUST ssh2 sends, with ssh2's own count of the window
 * (`incoming.window`) kept in step so its flow control stays exact. Private to ssh2 (1.17), hence
 * checked: where its internals differ this does nothing and ssh2's window applies.
 */
function widenWindow(s: Session): void {
  const channel = s.sftp as unknown as { incoming?: { window?: unknown }; outgoing?: { id?: unknown; state?: unknown } };
  const protocol = (s.client.client as unknown as { _protocol?: { channelWindowAdjust?: unknown } })._protocol;
  const window = channel.incoming?.window;
  const id = channel.outgoing?.id;
  if (typeof window !== 'number' || typeof id !== 'number' || typeof protocol?.channelWindowAdjust !== 'function') return;
  if (channel.outgoing?.state !== 'open' || window >= READ_WINDOW / 2) return;
  const grant = READ_WINDOW - window;
  channel.incoming!.window = window + grant;
  (protocol.channelWindowAdjust as (id: number, n: number) => void).call(protocol, id, grant);
}

/** Reads `len` bytes at `pos` (fewer at the end of the file, none past it), into `into` when given. */
export function readAt(s: Session, h: Buffer, pos: number, len: number, into?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const buf = into ?? Buffer.allocUnsafe(len);
    if (s.closed) return reject(new Error(s.closed));
    try {
      s.sftp.read(h, buf, 0, len, pos, (err, n) => {
        if (err) return reject(err);
        widenWindow(s);
        resolve(buf.subarray(0, n));
      });
    } catch (e) {
      reject(e as Error);
    }
  });
}

/**
 * Streams a remote file with up to READ_DEPTH requests in flight, yielding its bytes in order.
 * It reads until the server says end of file (a file that grew since it was listed is read
 * whole); a short read anywhere restarts the window where it ended. The handle is closed in all cases.
 *
 * A file of up to ONE_BUFFER_MAX is read into one buffer of its listed size (and one read more),
 * and its pieces are views of it: a reader that wants the file whole (chunksOf) takes it without
 * a copy, and a PM file costs one allocation instead of one per read. Larger files are streamed in
 * buffers of their own, never held whole.
 */
export async function* readStream(s: Session, file: string, listedSize: number, signal: AbortSignal): AsyncGenerator<Buffer> {
  const h = await openFile(s, file, 'read');
  const len = s.readLen;
  const whole = listedSize <= ONE_BUFFER_MAX ? Buffer.allocUnsafe(listedSize + len) : undefined;
  const queue: { pos: number; data: Promise<Buffer> }[] = [];
  try {
    let next = 0;
    let bound = listedSize;
    for (;;) {
      // One request at or past the listed end finds out whether the file ends there.
      while (queue.length === 0 || (queue.length < READ_DEPTH && next <= bound)) {
        const data = readAt(s, h, next, len, whole && next + len <= whole.length ? whole.subarray(next, next + len) : undefined);
        data.catch(() => undefined); // awaited in order below
        queue.push({ pos: next, data });
        next += len;
      }
      const { pos, data } = queue.shift()!;
      const chunk = await data;
      signal.throwIfAborted();
      if (chunk.length === 0) return;
      yield chunk;
      if (chunk.length < len) {
        await Promise.allSettled(queue.map((q) => q.data));
        queue.length = 0;
        next = pos + chunk.length;
      } else bound = Math.max(bound, pos + len);
    }
  } finally {
    // Not awaited: the server answers in order, so anything sent later (a move, the next open)
    // comes after the close; read requests still in flight have their rejections caught above.
    void closeFile(s, h).catch(() => undefined);
  }
}

/** Writes all of `buf` at `pos`, up to WRITE_DEPTH requests in flight; fails when any of them failed. */
export async function writeAt(s: Session, h: Buffer, buf: Buffer, pos: number): Promise<void> {
  const len = s.writeLen;
  let failed: unknown;
  const inFlight = new Set<Promise<void>>();
  for (let off = 0; off < buf.length && failed === undefined; off += len) {
    const n = Math.min(len, buf.length - off);
    const p: Promise<void> = call<number>(s, (cb) => s.sftp.write(h, buf, off, n, pos + off, cb)).then(
      () => void inFlight.delete(p),
      (e: unknown) => {
        inFlight.delete(p);
        failed ??= e;
      },
    );
    inFlight.add(p);
    if (inFlight.size >= WRITE_DEPTH) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  if (failed !== undefined) throw failed;
}
