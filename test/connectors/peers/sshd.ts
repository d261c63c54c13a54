// Peer fixture for the sftp connector: a PRIVATE OpenSSH server (Debian's /usr/sbin/sshd, `sshd -D
// -e -f <tmp config>`) on a free loopback port, with its own ed25519 host key, `internal-sftp`,
// no PAM, its PID file and authorized_keys in a temporary directory. Logins are as a dedicated
// system user (`svcsftp`, created once with useradd, its password set with chpasswd on every start,
// so the fixture is idempotent) with a password or with the fixture's authorized client key; the
// tests run as root, which both need (useradd, and sshd switching to the user). Files are put into
// and read back from the server's directory tree directly (it is this machine's file system).
// disrupt() kills the per-connection sshd processes (the live SFTP sessions) and restarts the
// listener on the same port; everything is stopped by PID, nothing is left running.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../helpers/net.js';
import type { Cfg, Collector, Peer, PeerFixture, Rec } from '../conformance.js';
import { peerProcess } from './process.js';

const run = promisify(execFile);

export const SSHD = '/usr/sbin/sshd';
export const USER = 'svcsftp';
export const PASSWORD = 'svc-sftp-right-pw';

export interface SshdServer {
  host: '127.0.0.1';
  port: number;
  /** The fixture's temporary directory (config, keys). */
  dir: string;
  /** A directory owned by the test user: each test works under a subdirectory of it. */
  root: string;
  user: string;
  password: string;
  /** A client private key in authorized_keys (OpenSSH format, no passphrase). */
  keyPath: string;
  /** A client private key that is not authorized. */
  otherKeyPath: string;
  /** The same authorized key, encrypted with `keyPassphrase`. */
  encryptedKeyPath: string;
  keyPassphrase: string;
  uid: number;
  gid: number;
  /** SHA256:... fingerprint of the current host key. */
  fingerprint(): string;
  /** The host key line `ssh-ed25519 AAAA...` (for a known_hosts file). */
  hostKeyLine(): string;
  /** Kills the live sessions (per-connection sshd processes) and the listener, then listens again on the same port. */
  restart(opts?: { newHostKey?: boolean }): Promise<void>;
  /** Kills the per-connection sshd processes only (the listener stays): live SFTP sessions drop. */
  killSessions(): number;
  /** Hands a path (file or tree) under `root` to the test user. */
  own(path: string): void;
  stop(): Promise<void>;
}

/** Creates the test user once; sets its password every time (chpasswd), so a rerun finds it ready. */
function ensureUser(): { uid: number; gid: number } {
  if (process.getuid?.() !== 0) throw new Error('the sftp tests need root: they create the system user svcsftp and run sshd as root');
  const id = (flag: string) => Number(execFileSync('id', [flag, USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim());
  try {
    id('-u');
  } catch {
    try {
      execFileSync('useradd', ['--system', '--no-create-home', '--home-dir', '/tmp', '--shell', '/bin/sh', USER], { stdio: 'pipe' });
    } catch (e) {
      // Another test file may have created it at the same moment.
      if (!/already exists/.test(String((e as { stderr?: Buffer }).stderr ?? ''))) throw e;
    }
  }
  execFileSync('chpasswd', [], { input: `${USER}:${PASSWORD}\n`, stdio: ['pipe', 'pipe', 'pipe'] });
  return { uid: id('-u'), gid: id('-g') };
}

const keygen = (file: string, extra: string[] = []) =>
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'svc-test', '-f', file, ...extra], { stdio: 'pipe' });

/** PIDs of every process below `pid` (its children, their children...), read from /proc. */
export function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      // The command name (field 2) may contain spaces: the fields after its closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(d), ppid);
    } catch {
      /* exited meanwhile */
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, pp] of parent) {
      if (pp === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

const killAll = (pids: number[]) => {
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
  return pids.length;
};

function ownTree(path: string, uid: number, gid: number) {
  chownSync(path, uid, gid);
  if (statSync(path).isDirectory()) for (const e of readdirSync(path)) ownTree(join(path, e), uid, gid);
}

/** A private sshd on a free loopback port; resolves once it accepts connections. */
export async function sshdServer(opts: { extraConfig?: string[] } = {}): Promise<SshdServer> {
  const { uid, gid } = ensureUser();
  // sshd's privilege separation directory; absent on a fresh machine where sshd never ran.
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-sshd-'));
  chmodSync(dir, 0o755); // the user reads authorized_keys and works below it
  const hostKey = join(dir, 'host_ed25519');
  keygen(hostKey);
  const keyPath = join(dir, 'client_ed25519');
  const otherKeyPath = join(dir, 'other_ed25519');
  const encryptedKeyPath = join(dir, 'client_encrypted');
  const keyPassphrase = 'svc-key-passphrase';
  keygen(keyPath);
  keygen(otherKeyPath);
  writeFileSync(encryptedKeyPath, readFileSync(keyPath));
  chmodSync(encryptedKeyPath, 0o600);
  execFileSync('ssh-keygen', ['-q', '-p', '-N', keyPassphrase, '-P', '', '-f', encryptedKeyPath], { stdio: 'pipe' });
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, readFileSync(`${keyPath}.pub`));
  chmodSync(authorized, 0o644);
  const root = join(dir, 'data');
  mkdirSync(root);
  chownSync(root, uid, gid);
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      'ListenAddress 127.0.0.1',
      `Port ${port}`,
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorized}`,
      'StrictModes no',
      'UsePAM no',
      'PasswordAuthentication yes',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin no',
      `AllowUsers ${USER}`,
      'UseDNS no',
      'MaxStartups 200',
      'MaxSessions 50',
      'LogLevel ERROR',
      'Subsystem sftp internal-sftp',
      ...(opts.extraConfig ?? []),
      '',
    ].join('\n'),
  );
  const proc = peerProcess(SSHD, ['-D', '-e', '-f', config], port);
  await proc.start();
  const killSessions = () => {
    const listener = proc.pid();
    return listener > 0 ? killAll(descendants(listener)) : 0;
  };
  const pubOf = () => readFileSync(`${hostKey}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
  return {
    host: '127.0.0.1',
    port,
    dir,
    root,
    user: USER,
    password: PASSWORD,
    keyPath,
    otherKeyPath,
    encryptedKeyPath,
    keyPassphrase,
    uid,
    gid,
    fingerprint: () => execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${hostKey}.pub`], { encoding: 'utf8' }).split(' ')[1]!,
    hostKeyLine: pubOf,
    async restart(o = {}) {
      killSessions();
      await proc.kill();
      if (o.newHostKey) {
        rmSync(hostKey, { force: true });
        rmSync(`${hostKey}.pub`, { force: true });
        keygen(hostKey);
      }
      await proc.start();
    },
    killSessions,
    own: (path: string) => ownTree(path, uid, gid),
    async stop() {
      killSessions();
      await proc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Records of every JSON-array file below `dir` (hidden temporaries and unfinished files left out). */
export function jsonFileRecords(dir: string): Rec[] {
  const out: Rec[] = [];
  if (!existsSync(dir)) return out;
  const files: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      if (e.isDirectory()) walk(join(d, e.name));
      else files.push(join(d, e.name));
    }
  };
  walk(dir);
  for (const f of files.sort()) {
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(f, 'utf8'));
    } catch {
      continue; // still being written (append mode: the closing bracket comes at the end)
    }
    if (Array.isArray(doc)) out.push(...(doc as Rec[]));
    else out.push(doc as Rec);
  }
  return out;
}

/** Writes `bodies` (JSON documents) as JSON-array files of at most `perFile` elements into `dir`, owned by the test user. */
export function putJsonFiles(
  server: SshdServer,
  dir: string,
  bodies: Buffer[],
  perFile = 250,
  name = (i: number) => `part-${String(i).padStart(4, '0')}.json`,
) {
  mkdirSync(dir, { recursive: true });
  for (let i = 0, n = 0; i < bodies.length; i += perFile, n++) {
    writeFileSync(
      join(dir, name(n)),
      `[${bodies
        .slice(i, i + perFile)
        .map((b) => b.toString())
        .join(',')}]`,
    );
  }
  server.own(dir);
}

/** Runs the OpenSSH `sftp` client in batch mode with the fixture's key. */
export async function sftpBatch(server: SshdServer, commands: string[], knownHosts: string): Promise<string> {
  const batch = join(server.dir, `batch-${process.pid}-${Date.now()}`);
  writeFileSync(batch, commands.join('\n') + '\n');
  try {
    const { stdout } = await run(
      'sftp',
      [
        '-b',
        batch,
        '-i',
        server.keyPath,
        '-P',
        String(server.port),
        '-o',
        `UserKnownHostsFile=${knownHosts}`,
        '-o',
        'StrictHostKeyChecking=accept-new',
        '-o',
        'BatchMode=yes',
        `${server.user}@127.0.0.1`,
      ],
      { maxBuffer: 1 << 26 },
    );
    return stdout;
  } finally {
    rmSync(batch, { force: true });
  }
}

export const sftpFixture: PeerFixture = {
  type: 'sftp',
  badConfig: { role: 'sink', set: { file_mode: 'rotate' }, path: 'file_mode' },
  async start(): Promise<Peer> {
    const server = await sshdServer();
    const knownHosts = join(server.dir, 'known_hosts');
    const base = (channel: string): Cfg => ({
      type: 'sftp',
      host: server.host,
      port: server.port,
      username: server.user,
      password: server.password,
      remote_path: join(server.root, channel),
      known_hosts: knownHosts,
    });
    return {
      source: {
        config: (ch) => base(ch),
        prepare: async (ch) => {
          mkdirSync(join(server.root, ch), { recursive: true });
          server.own(join(server.root, ch));
        },
        publish: async (ch, bodies) => putJsonFiles(server, join(server.root, ch), bodies),
      },
      sink: {
        config: (ch) => base(ch),
        async collect(ch): Promise<Collector> {
          const dir = join(server.root, ch);
          return { records: () => jsonFileRecords(dir), close: async () => rmSync(dir, { recursive: true, force: true }) };
        },
      },
      wrongPort: (cfg) => ({ ...cfg, port: 1 }),
      wrongCredentials: (cfg) => ({ ...cfg, password: 'wrong-secret' }),
      async disrupt() {
        await server.restart();
      },
      stop: () => server.stop(),
    };
  },
};

/** `path` relative to the server's data root, '/'-separated (for messages). */
export const underRoot = (server: SshdServer, path: string) => relative(server.root, path);
