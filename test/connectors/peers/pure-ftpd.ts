// Peer fixture for the ftp connector: a private pure-ftpd (Debian's /usr/sbin/pure-ftpd 1.0.50) on
// a free loopback port, in the foreground, with virtual users in a PureDB (written here with SHA-512
// crypt hashes: pure-pw's default argon2 costs seconds per login on a busy machine) mapped to the
// unprivileged uid `nobody`, chrooted (-A) into one home directory. It is started in its own process
// group because it forks two processes per session: stop and restart kill the whole group (SIGKILL),
// and dropSessions() kills only the session processes, so connections drop while it keeps listening.
// The test writes and reads the home directory on disk directly (publish, collect). ftpProxy() puts
// a TCP proxy in front of it that cuts one transfer after an exact number of bytes.
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../helpers/net.js';
import type { Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { peerProcess } from './process.js';

export const PURE_FTPD = '/usr/sbin/pure-ftpd';
/** uid and gid of `nobody`: the virtual users' files belong to it. */
const NOBODY = 65534;
export const PASSWORD = 'svc-ftp-secret';

export interface PureFtpd {
  host: string;
  port: number;
  /** The users' home (their `/`) on disk. */
  root: string;
  user: string;
  /** Same home, uploads and downloads throttled to 64 KiB/s (to cut a transfer in the middle). */
  slowUser: string;
  password: string;
  /** With `tls`: the server's self-signed certificate (for tls_ca_certs). */
  certFile?: string;
  /** SIGKILLs the processes that serve sessions: every connection drops, the server keeps listening. Returns how many. */
  dropSessions(): number;
  /** Kills the process group and starts again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Pids of every descendant of `pid` (from /proc). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') continue;
    const ppid = Number(fields[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

const cryptSha512 = (password: string) => execFileSync('openssl', ['passwd', '-6', password], { encoding: 'utf8' }).trim();

/** A private pure-ftpd. `tls`: explicit TLS required for control and data (-Y 3) with a self-signed certificate for 127.0.0.1. */
export async function pureFtpd(opts: { tls?: boolean } = {}): Promise<PureFtpd> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pure-ftpd-'));
  const root = join(dir, 'home');
  mkdirSync(root);
  chownSync(root, NOBODY, NOBODY);
  const hash = cryptSha512(PASSWORD);
  // login:hash:uid:gid:gecos:home/./ (chroot):upload bw:download bw (bytes/s):... (pure-pw's format)
  const line = (user: string, bw = '') => `${user}:${hash}:${NOBODY}:${NOBODY}::${root}/./:${bw}:${bw}::::::::::\n`;
  writeFileSync(join(dir, 'passwd'), line('svc') + line('slow', String(64 * 1024)), { mode: 0o600 });
  execFileSync('pure-pw', ['mkdb', join(dir, 'pureftpd.pdb'), '-f', join(dir, 'passwd')]);
  let certFile: string | undefined;
  const tlsArgs: string[] = [];
  if (opts.tls) {
    certFile = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        certFile,
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    writeFileSync(join(dir, 'server.pem'), readFileSync(key, 'utf8') + readFileSync(certFile, 'utf8'), { mode: 0o600 });
    tlsArgs.push('-Y', '3', '-2', join(dir, 'server.pem'));
  }
  const port = await freePort();
  const passive = 40000 + Math.floor(Math.random() * 200) * 100;
  const args = [
    '-S',
    `127.0.0.1,${port}`,
    '-l',
    `puredb:${join(dir, 'pureftpd.pdb')}`,
    '-E', // no anonymous logins
    '-A', // chroot everyone
    '-H', // no DNS lookups
    '-j', // create the home directory if missing
    '-p',
    `${passive}:${passive + 99}`,
    '-c',
    '100',
    '-C',
    '100', // sessions: the tests open several at once
    ...tlsArgs,
  ];
  const proc = peerProcess(PURE_FTPD, args, port, { detached: true, name: 'pure-ftpd' });
  const start = () => proc.start();
  const kill = () => proc.kill();
  await start();
  return {
    host: '127.0.0.1',
    port,
    root,
    user: 'svc',
    slowUser: 'slow',
    password: PASSWORD,
    certFile,
    dropSessions() {
      const pid = proc.pid();
      const pids = pid > 0 ? descendants(pid) : [];
      for (const p of pids) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      return pids.length;
    },
    async restart() {
      await kill();
      await start();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A directory under the home, owned by the FTP user. */
export function ftpDir(server: PureFtpd, rel: string): string {
  const d = join(server.root, rel);
  mkdirSync(d, { recursive: true });
  chownSync(d, NOBODY, NOBODY);
  return d;
}

/** Writes a file into the home as the FTP user would own it. */
export function putFile(server: PureFtpd, rel: string, data: string | Buffer, mtime?: Date): string {
  const f = join(server.root, rel);
  writeFileSync(f, data);
  chownSync(f, NOBODY, NOBODY);
  if (mtime) execFileSync('touch', ['-d', mtime.toISOString(), f]);
  return f;
}

/** JSON-array files of `perFile` bodies each into `<channel>/`: a batch source's input. */
export function publishJson(server: PureFtpd, channel: string, bodies: Buffer[], perFile = 250): void {
  ftpDir(server, channel);
  for (let i = 0, n = 0; i < bodies.length; i += perFile, n++) {
    putFile(server, `${channel}/batch-${String(n).padStart(4, '0')}.json`, `[${bodies.slice(i, i + perFile).join(',')}]`);
  }
}

/** The published (not hidden) files of a directory, by name; none while it does not exist. */
export function publishedFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => !n.startsWith('.'))
      .sort();
  } catch {
    return [];
  }
}

/**
 * Reads every published file under `dir` every 50 ms: each must be one complete JSON array (the
 * sink's serializer_out is json). A file that does not parse is a partial file a reader could see.
 */
export function collectJson(dir: string): Collector & { partial: string[] } {
  let got: Rec[] = [];
  const partial: string[] = [];
  const read = () => {
    const out: Rec[] = [];
    for (const n of publishedFiles(dir)) {
      let text: string;
      try {
        text = readFileSync(join(dir, n), 'utf8');
      } catch {
        continue; // renamed away between listing and reading
      }
      try {
        out.push(...(JSON.parse(text) as Rec[]));
      } catch {
        if (!partial.includes(n)) partial.push(n);
      }
    }
    got = out;
  };
  const timer = setInterval(read, 50);
  return {
    partial,
    records: () => {
      read();
      return got;
    },
    async close() {
      clearInterval(timer);
    },
  };
}

/**
 * A TCP proxy in front of the server that can cut one data transfer after an exact number of bytes
 * (fault injection). It relays the control connection and rewrites each EPSV answer (229) to a
 * data port of its own, so that the data connections pass through it too; basic-ftp tries EPSV
 * first and pure-ftpd offers it, so PASV (227) is not rewritten.
 */
export interface FtpProxy {
  port: number;
  /**
   * Cuts the next data transfer that carries more than `after` bytes in `direction` (after `skip`
   * such transfers): the receiver gets exactly `after` bytes and a clean end (FIN), as if the file
   * had ended there, and the sender's side is reset. The control connection stays.
   */
  cutNext(direction: 'upload' | 'download', after: number, opts?: { skip?: number }): void;
  /** Transfers cut so far. */
  cuts(): number;
  /** The control commands clients sent, in order (PASS masked). */
  commands(): string[];
  close(): Promise<void>;
}

/** `hideFeatures`: FEAT lines dropped from the server's answer (`['MLST']`: a server without MLSD, listed by LIST). */
export async function ftpProxy(server: Pick<PureFtpd, 'port'>, opts: { hideFeatures?: string[] } = {}): Promise<FtpProxy> {
  const hidden = new RegExp(`^ (${(opts.hideFeatures ?? []).join('|') || '(?!)'})\\b`, 'i');
  const sockets = new Set<Socket>();
  const servers = new Set<Server>();
  let plan: { direction: 'upload' | 'download'; after: number; skip: number } | undefined;
  let cuts = 0;
  const commands: string[] = [];
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s)).on('error', () => undefined);
    return s;
  };
  /** A one-connection listener relaying to the server's data port `port` (small transfers: no backpressure). */
  const dataRelay = (port: number) =>
    new Promise<number>((resolve) => {
      const l = createServer((client) => {
        l.close();
        servers.delete(l);
        track(client);
        const up = track(connect({ host: '127.0.0.1', port }));
        const relay = (from: Socket, to: Socket, direction: 'upload' | 'download') => {
          let n = 0;
          let qualified = false;
          from.on('data', (b: Buffer) => {
            const p = plan;
            if (p && p.direction === direction && !qualified && n + b.length > p.after) {
              qualified = true;
              if (p.skip > 0) p.skip--;
              else {
                plan = undefined;
                cuts++;
                to.end(b.subarray(0, p.after - n)); // exactly `after` bytes, then FIN
                from.destroy();
                return;
              }
            }
            n += b.length;
            if (!to.destroyed) to.write(b);
          });
          from.on('end', () => to.end());
          from.on('close', () => setTimeout(() => to.destroy(), 100));
        };
        relay(client, up, 'upload');
        relay(up, client, 'download');
      });
      servers.add(l);
      l.listen(0, '127.0.0.1', () => resolve((l.address() as { port: number }).port));
    });
  const front = createServer((client) => {
    track(client);
    const up = track(connect({ host: '127.0.0.1', port: server.port }));
    client.on('data', (b: Buffer) => {
      for (const line of b.toString('latin1').split('\r\n')) if (line) commands.push(line.replace(/^PASS .*/, 'PASS ***'));
      up.write(b);
    });
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
    // Server answers, a line at a time, in order (an EPSV answer waits for its relay to listen).
    let pending = '';
    let chain = Promise.resolve();
    up.setEncoding('latin1').on('data', (text: string) => {
      pending += text;
      const lines = pending.split('\r\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (hidden.test(line)) continue;
        chain = chain.then(async () => {
          const m = /^229 (.*)\(\|\|\|(\d+)\|\)/.exec(line);
          const out = m ? `229 ${m[1]}(|||${await dataRelay(Number(m[2]))}|)` : line;
          if (!client.destroyed) client.write(`${out}\r\n`, 'latin1');
        });
      }
    });
  });
  servers.add(front);
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
  return {
    port: (front.address() as { port: number }).port,
    cutNext(direction, after, opts = {}) {
      plan = { direction, after, skip: opts.skip ?? 0 };
    },
    cuts: () => cuts,
    commands: () => [...commands],
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all([...servers].map((l) => new Promise((r) => l.close(() => r(undefined)))));
    },
  };
}

export const pureFtpdFixture: PeerFixture = {
  type: 'ftp',
  badConfig: { role: 'source', set: { passive: false }, path: 'passive' },
  async start(): Promise<Peer> {
    const server = await pureFtpd();
    const base = { type: 'ftp', host: server.host, port: server.port, username: server.user, password: server.password };
    return {
      source: {
        config: (ch) => ({ ...base, remote_path: `/${ch}` }),
        prepare: async (ch) => void ftpDir(server, ch),
        publish: async (ch, bodies) => publishJson(server, ch, bodies),
      },
      sink: {
        config: (ch) => ({ ...base, remote_path: `/${ch}` }),
        collect: async (ch) => collectJson(join(server.root, ch)),
      },
      wrongPort: (cfg) => ({ ...cfg, port: 1 }),
      wrongCredentials: (cfg) => ({ ...cfg, password: 'wrong-secret' }),
      disrupt: () => server.restart(),
      stop: () => server.stop(),
    };
  },
};
