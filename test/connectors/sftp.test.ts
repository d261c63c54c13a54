// The sftp connector against a private OpenSSH server (test/connectors/peers/sshd.ts): the shared
// conformance suite, then what it does not cover: password, key and encrypted-key logins and
// their failures; host-key checking (accept-new remembers and refuses a changed key, strict,
// off, a pinned fingerprint, hashed known_hosts entries, where accepted keys are kept); the
// file-done guards, skip_processed, move_after_read onto a taken name, delete_after_read,
// recursive; a connection killed mid-file (the file stays and the next run reads it once); the
// sink's append across runs (one JSON array), single mode's atomic publish and overwrite, rolling
// parts; and a 200 MB file read with bounded memory.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadComponent } from '../../src/config/load.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import { connectSftp, endSession, hostKeyPolicy, readStream, type SftpServer } from '../../src/plugins/connectors/sftp/client.js';
import { registry } from '../../src/plugins/registry.js';
import type { ConnectionState, ProcessedFiles } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords, until } from './helpers.js';
import { jsonFileRecords, putJsonFiles, sftpFixture, sshdServer, type SshdServer } from './peers/sshd.js';

conformance(sftpFixture);

let server: SshdServer;
beforeAll(async () => {
  server = await sshdServer();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const knownHosts = () => join(server.dir, 'known_hosts');
/** Login with the password and the test's own known_hosts file. */
const login = (extra: Cfg = {}): Cfg => ({
  type: 'sftp',
  host: server.host,
  port: server.port,
  username: server.user,
  password: server.password,
  known_hosts: knownHosts(),
  ...extra,
});
const seq = (from: number, n: number, pad = 16) => Array.from({ length: n }, (_, i) => Buffer.from(JSON.stringify({ seq: from + i, pad: 'x'.repeat(pad) })));

/** A fresh directory under the server's data root, owned by the login user. */
function remoteDir(tag = ''): string {
  const d = join(server.root, uniqueChannel('sftp') + tag);
  mkdirSync(d, { recursive: true });
  server.own(d);
  return d;
}

/** Every name below `dir` (hidden ones too), relative, sorted. */
function tree(dir: string, rel = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? tree(join(dir, e.name), `${rel}${e.name}/`) : [`${rel}${e.name}`]))
    .sort();
}

function recordingLog() {
  const lines: Rec[] = [];
  return { log: pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Rec) }) as unknown as Logger, lines };
}

interface RunOpts {
  processed?: ProcessedFiles;
  log?: Logger;
  stateDir?: string;
  extra?: Cfg;
  serializerIn?: Cfg;
  out?: string;
}

/** One manual run from an sftp source into local NDJSON. */
async function sourceRun(name: string, source: Cfg, o: RunOpts = {}) {
  const out = o.out ?? tempDir('svc-sftp-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c === 'source' && states.push(s)) };
  const config = loadPipeline({
    name,
    schedule: { type: 'manual' },
    source: { ...login(), ...source },
    serializer_in: o.serializerIn ?? { type: 'json' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: '{source_stem}.ndjson' }],
    ...o.extra,
  });
  const rec = await runPipeline(config, {
    log: o.log ?? silentLogger,
    processed: o.processed ?? new MemoryProcessedFiles(),
    telemetry,
    services: o.stateDir ? { stateDir: o.stateDir } : undefined,
  });
  return { rec, out, states, records: () => outputRecords(out), files: () => readdirSync(out).sort() };
}

/** One manual run of `records` from a local NDJSON file into an sftp sink. */
async function sinkRun(name: string, sink: Cfg, records: Rec[], extra: Cfg = {}, inputs?: Record<string, Rec[]>) {
  const dir = tempDir('svc-sftp-in-');
  mkdirSync(join(dir, 'in'));
  for (const [file, recs] of Object.entries(inputs ?? { 'records.ndjson': records }))
    writeFileSync(join(dir, 'in', file), recs.map((r) => JSON.stringify(r) + '\n').join(''));
  const config = loadPipeline({
    name,
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks: [{ ...login(), ...sink }],
    ...extra,
  });
  return runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
}

const check = (role: 'source' | 'sink', cfg: Cfg) => {
  const r = loadComponent(role, cfg, { env: {} });
  if (!r.config) throw new Error(JSON.stringify(r.diagnostics));
  return testConnector(role, r.config, { timeoutMs: 15_000 });
};

describe('sftp: logins', () => {
  it('a private key, an encrypted key with its passphrase; clear failures for a wrong key, a missing passphrase or key file', async () => {
    const remote_path = remoteDir();
    const key = { ...login({ remote_path }), password: undefined };
    expect(await check('source', { ...key, private_key_path: server.keyPath })).toMatchObject({ ok: true });
    expect(await check('sink', { ...key, private_key_path: server.encryptedKeyPath, private_key_passphrase: server.keyPassphrase })).toMatchObject({
      ok: true,
    });
    const wrong = await check('source', { ...key, private_key_path: server.otherKeyPath });
    expect(wrong.error).toMatch(/^sftp: authentication failed for user svcsftp at 127\.0\.0\.1:\d+ \(private key .*other_ed25519 refused\)/);
    expect((await check('source', { ...key, private_key_path: server.encryptedKeyPath })).error).toMatch(
      /cannot use private_key_path .*: .*no passphrase given/,
    );
    const badPass = await check('sink', { ...key, private_key_path: server.encryptedKeyPath, private_key_passphrase: 'wrong-passphrase' });
    expect(badPass.error).toMatch(/bad passphrase/);
    expect(badPass.error).not.toContain('wrong-passphrase');
    expect((await check('source', { ...key, private_key_path: join(server.dir, 'missing') })).error).toMatch(/cannot read private_key_path .*missing: ENOENT/);
  });

  it('a run reads over key authentication; a wrong password fails the run saying so, without the password', async () => {
    const dir = remoteDir();
    putJsonFiles(server, dir, seq(0, 5));
    const ok = await sourceRun('sftp-key', { remote_path: dir, password: undefined, private_key_path: server.keyPath });
    expect(ok.rec.status, JSON.stringify(ok.rec)).toBe('success');
    expect(ok.rec.records_in).toBe(5);
    expect(ok.states.slice(0, 2)).toEqual(['connecting', 'connected']);
    const bad = await sourceRun('sftp-bad-password', { remote_path: dir, password: 'wrong-secret-1' });
    expect(bad.rec.status).toBe('failed');
    expect(bad.rec.error).toMatch(/authentication failed for user svcsftp .*password refused/);
    expect(bad.rec.error).not.toContain('wrong-secret-1');
  });

  it('remote_path that does not exist fails the run and the check, naming it', async () => {
    const missing = join(server.root, 'no-such-dir');
    const r = await sourceRun('sftp-missing', { remote_path: missing });
    expect(r.rec.status).toBe('failed');
    expect(r.rec.error).toContain(`cannot read remote_path ${missing}`);
    expect(r.rec.error).toContain('no such file or directory; create it or correct remote_path');
    expect((await check('source', login({ remote_path: missing }))).error).toMatch(/no-such-dir on 127\.0\.0\.1:\d+: no such file/);
  });

  it('lint: a login method is required, host key options that contradict each other are named', () => {
    const r = loadComponent('source', { type: 'sftp', host: 'h', username: 'u', remote_path: '/x' }, { env: {} });
    expect(r.diagnostics.map((d) => d.path)).toContain('password');
    const r2 = loadComponent(
      'sink',
      { type: 'sftp', host: 'h', username: 'u', password: 'p', remote_path: '/x', host_key_check: 'off', host_key_fingerprint: 'SHA256:' + 'A'.repeat(43) },
      { env: {} },
    );
    expect(r2.diagnostics.map((d) => d.path)).toContain('host_key_fingerprint');
    const r3 = loadComponent('source', { type: 'sftp', host: 'h', username: 'u', password: 'p', remote_path: '/x', move_after_read: '/x/' }, { env: {} });
    expect(r3.diagnostics.map((d) => d.path)).toContain('move_after_read');
    const r4 = loadComponent('sink', { type: 'sftp', host: 'h', username: 'u', password: 'p', remote_path: '/x', overwrite: false }, { env: {} });
    expect(r4.diagnostics.map((d) => d.path)).toContain('overwrite');
  });
});

describe('sftp: host keys', () => {
  /** A server of its own: these tests replace its host key. */
  let own: SshdServer;
  beforeAll(async () => {
    own = await sshdServer();
  }, 60_000);
  afterAll(async () => {
    await own?.stop();
  });
  const cfg = (extra: Cfg): Cfg => ({
    type: 'sftp',
    host: own.host,
    port: own.port,
    username: own.user,
    password: own.password,
    remote_path: own.root,
    ...extra,
  });

  it('accept-new (default) remembers a new key with a warning, then refuses a changed key; strict refuses it too; off does not', async () => {
    const file = join(tempDir('svc-sftp-kh-'), 'nested', 'known_hosts');
    // A reachability check never records anything.
    expect(await check('source', cfg({ known_hosts: file }))).toMatchObject({ ok: true });
    expect(existsSync(file)).toBe(false);
    const { log, lines } = recordingLog();
    const first = await sourceRun('sftp-accept-new', { ...cfg({ known_hosts: file }) }, { log });
    expect(first.rec.status, JSON.stringify(first.rec)).toBe('success');
    expect(readFileSync(file, 'utf8')).toBe(`[127.0.0.1]:${own.port} ${own.hostKeyLine()}\n`);
    const warned = lines.find((l) => String(l.msg).includes('host key'));
    expect(warned?.msg).toContain(`host key ssh-ed25519 ${own.fingerprint()} accepted and added to ${file}`);
    expect(warned?.level).toBe(40);
    // Known now: no second line, no warning.
    const again = recordingLog();
    expect((await sourceRun('sftp-accept-new', cfg({ known_hosts: file }), { log: again.log })).rec.status).toBe('success');
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(again.lines.filter((l) => String(l.msg).includes('host key'))).toEqual([]);

    const oldFingerprint = own.fingerprint();
    await own.restart({ newHostKey: true });
    expect(own.fingerprint()).not.toBe(oldFingerprint);
    for (const mode of ['accept-new', 'strict']) {
      const r = await sourceRun(`sftp-changed-${mode}`, cfg({ known_hosts: file, host_key_check: mode }));
      expect(r.rec.status).toBe('failed');
      expect(r.rec.error).toContain(`host key of [127.0.0.1]:${own.port} has CHANGED: the server offered ssh-ed25519 ${own.fingerprint()}`);
      expect(r.rec.error).toContain(`ssh-keygen -R '[127.0.0.1]:${own.port}' -f ${file}`);
      const t = await check('sink', cfg({ known_hosts: file, host_key_check: mode }));
      expect(t.error).toMatch(/has CHANGED/);
    }
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1);
    expect((await sourceRun('sftp-changed-off', cfg({ known_hosts: file, host_key_check: 'off' }))).rec.status).toBe('success');
  }, 60_000);

  it('strict: refuses an unknown server, accepts one in an OpenSSH hashed known_hosts file; a pinned fingerprint', async () => {
    const dir = tempDir('svc-sftp-kh-');
    const file = join(dir, 'known_hosts');
    const unknown = await check('source', cfg({ known_hosts: file, host_key_check: 'strict' }));
    expect(unknown.error).toContain(`is not in ${file} and host_key_check is strict; add it (ssh-keyscan -p ${own.port} 127.0.0.1 >> ${file})`);
    writeFileSync(file, `# made by hand\nother.example ${own.hostKeyLine()}\n[127.0.0.1]:${own.port} ${own.hostKeyLine()}\n`);
    execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' }); // hashes every name, as HashKnownHosts does
    expect(readFileSync(file, 'utf8')).not.toContain('127.0.0.1');
    expect(await check('sink', cfg({ known_hosts: file, host_key_check: 'strict' }))).toMatchObject({ ok: true });
    expect((await sourceRun('sftp-strict', cfg({ known_hosts: file, host_key_check: 'strict' }))).rec.status).toBe('success');

    expect(await check('source', cfg({ host_key_fingerprint: own.fingerprint() }))).toMatchObject({ ok: true });
    const pinned = await check('source', cfg({ host_key_fingerprint: 'SHA256:' + 'A'.repeat(43) }));
    expect(pinned.error).toContain(`is ssh-ed25519 ${own.fingerprint()}, not host_key_fingerprint SHA256:${'A'.repeat(43)}`);
  });

  it('without known_hosts, accepted keys are kept in the daemon state directory (or SVC_STATE_DIR for svc run)', async () => {
    const state = tempDir('svc-sftp-state-');
    expect((await sourceRun('sftp-state-dir', cfg({ known_hosts: undefined }), { stateDir: state })).rec.status).toBe('success');
    expect(readFileSync(join(state, 'known_hosts'), 'utf8')).toContain(`[127.0.0.1]:${own.port} ssh-ed25519 `);
    const cli = tempDir('svc-sftp-state-');
    const before = process.env.SVC_STATE_DIR;
    process.env.SVC_STATE_DIR = cli;
    try {
      expect((await sourceRun('sftp-state-env', cfg({ known_hosts: undefined }))).rec.status).toBe('success');
    } finally {
      if (before === undefined) delete process.env.SVC_STATE_DIR;
      else process.env.SVC_STATE_DIR = before;
    }
    expect(readFileSync(join(cli, 'known_hosts'), 'utf8')).toContain(`[127.0.0.1]:${own.port} ssh-ed25519 `);
  });
});

describe('sftp: reading a file', () => {
  /** The pieces readStream yields for `file`, listed at `listedSize` bytes. */
  async function pieces(file: string, listedSize: number): Promise<Buffer[]> {
    const cfg = login() as unknown as SftpServer;
    const s = await connectSftp(cfg, { policy: hostKeyPolicy(cfg, undefined, false), log: silentLogger });
    try {
      const out: Buffer[] = [];
      for await (const p of readStream(s, file, listedSize, new AbortController().signal)) out.push(p);
      return out;
    } finally {
      await endSession(s);
    }
  }

  it('reads a file in many requests into one buffer of its size; a larger file in buffers of their own; a file that grew since it was listed whole', async () => {
    const dir = remoteDir();
    const small = randomBytes(300_000); // about ten reads
    const large = randomBytes(17 * 1024 * 1024); // past the one-buffer limit (16 MiB)
    writeFileSync(join(dir, 'small.bin'), small);
    writeFileSync(join(dir, 'large.bin'), large);

    const s = await pieces(join(dir, 'small.bin'), small.length);
    expect(s.length).toBeGreaterThan(5);
    expect(Buffer.concat(s).equals(small)).toBe(true);
    expect(new Set(s.map((p) => p.buffer)).size).toBe(1);

    const l = await pieces(join(dir, 'large.bin'), large.length);
    expect(Buffer.concat(l).equals(large)).toBe(true);
    expect(new Set(l.map((p) => p.buffer)).size).toBe(l.length);

    const grown = await pieces(join(dir, 'small.bin'), 100_000); // listed before it grew to 300,000 bytes
    expect(Buffer.concat(grown).equals(small)).toBe(true);
  });
});

describe('sftp source: selection and finalizing', () => {
  it('file_min_age_seconds skips young files; file_done_suffix reads only done files and strips the suffix', async () => {
    const dir = remoteDir();
    putJsonFiles(server, dir, seq(0, 4), 2, (i) => `f${i}.json`);
    const old = new Date(Date.now() - 120_000);
    utimesSync(join(dir, 'f0.json'), old, old);
    const aged = await sourceRun('sftp-min-age', { remote_path: dir, file_min_age_seconds: 60 });
    expect(aged.files()).toEqual(['f0.ndjson']);
    expect(aged.rec.errors.join('\n')).toContain('skipped 1 file younger than file_min_age_seconds (60 s)');

    const done = remoteDir();
    putJsonFiles(server, done, seq(0, 6), 2, (i) => (i === 2 ? `c${i}.json` : `c${i}.json.done`));
    const r = await sourceRun('sftp-done', { remote_path: done, file_done_suffix: '.done' });
    expect(r.rec.records_in).toBe(4);
    expect(r.files()).toEqual(['c0.ndjson', 'c1.ndjson']); // {source_stem} of c0.json: the suffix is gone
  });

  it('file_stability_seconds leaves a file that is still growing for the next run', async () => {
    const dir = remoteDir();
    putJsonFiles(server, dir, seq(0, 4), 2, (i) => `s${i}.json`);
    // Rewritten (a longer document each time) all through the run, so that its two scans 1.5 s apart
    // differ however late the first comes on a busy machine.
    let length = 2;
    const timer = setInterval(() => writeFileSync(join(dir, 's1.json'), `[${seq(2, ++length).join(',')}]`), 300);
    const r = await sourceRun('sftp-stable', { remote_path: dir, file_stability_seconds: 1.5 });
    clearInterval(timer);
    expect(r.files()).toEqual(['s0.ndjson']);
    expect(r.rec.errors.join('\n')).toContain('still changing after file_stability_seconds (1.5 s)');
    const next = await sourceRun('sftp-stable', { remote_path: dir, file_stability_seconds: 0.2 });
    expect(next.rec.records_in).toBe(2 + length);
  });

  it('skip_processed: a delivered file is not read again until it changes', async () => {
    const dir = remoteDir();
    putJsonFiles(server, dir, seq(0, 6), 3, (i) => `p${i}.json`);
    const processed = new MemoryProcessedFiles();
    expect((await sourceRun('sftp-processed', { remote_path: dir, skip_processed: true }, { processed })).rec.records_in).toBe(6);
    const second = await sourceRun('sftp-processed', { remote_path: dir, skip_processed: true }, { processed });
    expect(second.rec.records_in).toBe(0);
    expect(second.rec.errors.join('\n')).toContain('skipped 2 files already processed');
    writeFileSync(join(dir, 'p1.json'), `[${seq(10, 4).join(',')}]`);
    const third = await sourceRun('sftp-processed', { remote_path: dir, skip_processed: true }, { processed });
    expect(third.records().map((x) => x.seq)).toEqual([10, 11, 12, 13]);
  });

  it('move_after_read never replaces a file in the archive: a taken name gets _1; sub-paths are kept (recursive)', async () => {
    const dir = remoteDir();
    const archive = remoteDir('-archive');
    putJsonFiles(server, dir, seq(0, 2), 2, () => 'a.json');
    putJsonFiles(server, join(dir, 'sub'), seq(2, 2), 2, () => 'b.json');
    writeFileSync(join(archive, 'a.json'), 'already here');
    server.own(archive);
    const flat = await sourceRun('sftp-move', { remote_path: dir, move_after_read: archive });
    expect(flat.rec.records_in).toBe(2); // not recursive: sub/ is left alone
    expect(tree(archive)).toEqual(['a.json', 'a_1.json']);
    expect(readFileSync(join(archive, 'a.json'), 'utf8')).toBe('already here');
    expect(JSON.parse(readFileSync(join(archive, 'a_1.json'), 'utf8'))).toEqual(seq(0, 2).map((b) => JSON.parse(b.toString())));
    const deep = await sourceRun('sftp-move-deep', { remote_path: dir, move_after_read: archive, recursive: true });
    expect(deep.rec.records_in).toBe(2);
    expect(tree(archive)).toEqual(['a.json', 'a_1.json', 'sub/b.json']);
    expect(tree(dir)).toEqual([]);
  });

  it('delete_after_read removes delivered files; a file the user cannot read is noted and stays', async () => {
    const dir = remoteDir();
    putJsonFiles(server, dir, seq(0, 6), 2, (i) => `d${i}.json`);
    writeFileSync(join(dir, 'locked.json'), '[{"seq":99}]', { mode: 0o600 }); // root's, unreadable for the login user
    const r = await sourceRun('sftp-delete', { remote_path: dir, delete_after_read: true });
    expect(r.rec.records_in).toBe(6);
    expect(r.rec.errors.join('\n')).toMatch(/locked\.json: read failed: cannot read .*locked\.json: permission denied/);
    expect(tree(dir)).toEqual(['locked.json']);
  });

  it('a connection killed mid-file leaves the file unfinalized; the next run reads it once', async () => {
    const dir = remoteDir();
    const n = 10_000;
    // ~40 MB in 4 KB records, read slowly (50-record chunks, 10 writes/s) so the kill lands mid-file.
    writeFileSync(
      join(dir, 'big.ndjson'),
      seq(0, n, 4000)
        .map((b) => b.toString() + '\n')
        .join(''),
    );
    server.own(dir);
    const slow = { extra: { record_chunk_size: 50, rate_limit_rps: 10 }, serializerIn: { type: 'ndjson' } };
    const out = tempDir('svc-sftp-out-');
    const running = sourceRun('sftp-killed', { remote_path: dir, delete_after_read: true }, { ...slow, out });
    await until(() => outputRecords(out).length >= 100, 20_000, 'the first records');
    expect(server.killSessions()).toBeGreaterThan(0);
    const first = await running;
    expect(first.rec.errors.join('\n')).toMatch(/big\.ndjson: read failed: connection lost while reading/);
    expect(first.records().length).toBeLessThan(n);
    expect(first.states).toContain('disconnected');
    expect(existsSync(join(dir, 'big.ndjson'))).toBe(true);
    const second = await sourceRun('sftp-killed', { remote_path: dir, delete_after_read: true }, { serializerIn: { type: 'ndjson' } });
    expect(second.rec.status).toBe('success');
    expect(second.rec.records_in).toBe(n);
    expect(checkSequence(second.records(), n)).toEqual({ missing: [], duplicates: 0 });
    expect(existsSync(join(dir, 'big.ndjson'))).toBe(false);
    console.log(
      `[sftp] killed mid-file: ${first.records().length} of ${n} records delivered before the kill; the next run read all ${second.rec.records_in} once`,
    );
  }, 60_000);

  it('a 200 MB file is streamed: memory stays bounded', async () => {
    const dir = remoteDir();
    const line = 'y'.repeat(64 * 1024 - 1) + '\n';
    const fd = openSync(join(dir, 'large.txt'), 'w');
    const block = Buffer.from(line.repeat(16));
    for (let i = 0; i < 200; i++) writeSync(fd, block);
    closeSync(fd);
    server.own(dir);
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    const t0 = performance.now();
    const r = await sourceRun(
      'sftp-large',
      { remote_path: dir },
      { serializerIn: { type: 'text' }, extra: { sinks: [{ type: 'local', path: tempDir('svc-sftp-out-'), condition: '_line_num < 0' }] } },
    );
    clearInterval(sampler);
    const seconds = (performance.now() - t0) / 1000;
    expect(r.rec.status, JSON.stringify(r.rec)).toBe('success');
    expect(r.rec.records_in).toBe(3200);
    expect(r.rec.bytes_in).toBe(200 * 1024 * 1024);
    const growthMb = (peak - before) / 2 ** 20;
    console.log(`[sftp] 200 MB file: ${(200 / seconds).toFixed(0)} MB/s, RSS growth ${growthMb.toFixed(0)} MB`);
    expect(growthMb).toBeLessThan(120);
  }, 60_000);
});

describe('sftp sink', () => {
  const records = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ seq: from + i }));

  it('append: a second run appends to the same file, which stays one valid JSON array', async () => {
    const dir = remoteDir();
    expect((await sinkRun('sftp-append', { remote_path: dir, filename_template: 'out.json' }, records(0, 100))).status).toBe('success');
    expect(readFileSync(join(dir, 'out.json'), 'utf8').endsWith(']\n')).toBe(true);
    const r = await sinkRun('sftp-append', { remote_path: dir, filename_template: 'out.json' }, records(100, 150), { record_chunk_size: 50 });
    expect(r.status, JSON.stringify(r)).toBe('success');
    const doc = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as Rec[];
    expect(doc.map((x) => x.seq)).toEqual(records(0, 250).map((x) => x.seq));
    expect(tree(dir)).toEqual(['out.json']);
  });

  it('append refuses a file that does not end with the serializer closing bracket', async () => {
    const dir = remoteDir();
    writeFileSync(join(dir, 'out.json'), '{"not":"an array"');
    server.own(dir);
    const r = await sinkRun('sftp-append-bad', { remote_path: dir, filename_template: 'out.json' }, records(0, 3));
    expect(r.errors.join('\n')).toMatch(/cannot append to .*out\.json: it does not end with the serializer's closing "\]\\n"/);
  });

  it('single: each input is published whole under its name, through a hidden temporary that is never left behind', async () => {
    const dir = remoteDir();
    const seen = new Set<string>();
    let incomplete = 0;
    const poll = setInterval(() => {
      for (const name of tree(dir)) {
        const hidden = basename(name).startsWith('.');
        seen.add(hidden ? 'temporary' : name);
        if (!hidden) {
          try {
            JSON.parse(readFileSync(join(dir, name), 'utf8'));
          } catch {
            incomplete++;
          }
        }
      }
    }, 5);
    // Slow enough (10 chunks a second) that the 5 ms poll sees the temporary even on a busy machine.
    const r = await sinkRun(
      'sftp-single',
      { remote_path: dir, filename_template: 'sub/{source_stem}.json', file_mode: 'single' },
      [],
      { record_chunk_size: 50, rate_limit_rps: 10 },
      { 'a.ndjson': records(0, 300), 'b.ndjson': records(300, 200) },
    );
    clearInterval(poll);
    expect(r.status, JSON.stringify(r)).toBe('success');
    expect(tree(dir)).toEqual(['sub/a.json', 'sub/b.json']);
    expect(seen.has('temporary')).toBe(true);
    expect(incomplete).toBe(0);
    expect(jsonFileRecords(dir).map((x) => x.seq)).toEqual(records(0, 500).map((x) => x.seq));
  });

  it('single: an existing file is replaced atomically, or with overwrite false the write fails for good and the file is kept', async () => {
    const dir = remoteDir();
    writeFileSync(join(dir, 'r.json'), 'old');
    server.own(dir);
    expect((await sinkRun('sftp-replace', { remote_path: dir, filename_template: 'r.json', file_mode: 'single' }, records(0, 3))).status).toBe('success');
    expect(JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8'))).toEqual(records(0, 3));
    const kept = await sinkRun(
      'sftp-keep',
      { remote_path: dir, filename_template: 'r.json', file_mode: 'single', overwrite: false, retry_count: 3, retry_delay_seconds: 5 },
      records(10, 3),
    );
    expect(kept.errors.join('\n')).toMatch(/r\.json already exists and overwrite is false/);
    expect(JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8'))).toEqual(records(0, 3));
    expect(tree(dir).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('rolls to a new {part} every max_records, zero-padded to max_index', async () => {
    const dir = remoteDir();
    const r = await sinkRun('sftp-roll', { remote_path: dir, filename_template: 'roll_{part}.json', max_records: 300 }, records(0, 1000), {
      record_chunk_size: 100,
    });
    expect(r.status, JSON.stringify(r)).toBe('success');
    expect(tree(dir)).toEqual(['roll_00000.json', 'roll_00001.json', 'roll_00002.json', 'roll_00003.json']);
    expect(tree(dir).map((n) => (JSON.parse(readFileSync(join(dir, n), 'utf8')) as Rec[]).length)).toEqual([300, 300, 300, 100]);
    const small = remoteDir();
    await sinkRun('sftp-roll-99', { remote_path: small, filename_template: 'r{part}.json', max_records: 400, max_index: 99 }, records(0, 500), {
      record_chunk_size: 100,
    });
    expect(tree(small)).toEqual(['r00.json', 'r01.json']);
  });

  it('a directory the user may not write fails the write for good, saying why', async () => {
    const locked = join(server.root, uniqueChannel('sftp') + '-locked');
    mkdirSync(locked, { mode: 0o755 }); // root's
    const r = await sinkRun('sftp-denied', { remote_path: join(locked, 'out'), retry_count: 3, retry_delay_seconds: 5 }, records(0, 3));
    expect(r.errors.join('\n')).toMatch(/sftp: cannot open sftp:\/\/svcsftp@127\.0\.0\.1:\d+\/.*-locked\/out\/.*: permission denied/);
    expect((await check('sink', login({ remote_path: join(locked, 'out') }))).error).toMatch(/is not writable: permission denied/);
  });

  it('is registered with both roles and documents every doc 3 field with its default', () => {
    const src = registry.source.get('sftp')!;
    const snk = registry.sink.get('sftp')!;
    const props = (p: typeof src | typeof snk) => p.config.properties as Record<string, { default?: unknown }>;
    for (const f of [
      'host',
      'port',
      'username',
      'password',
      'private_key_path',
      'remote_path',
      'file_pattern',
      'move_after_read',
      'delete_after_read',
      'skip_processed',
      'file_stability_seconds',
      'file_min_age_seconds',
      'file_done_suffix',
    ])
      expect(props(src)).toHaveProperty(f);
    for (const f of [
      'host',
      'port',
      'username',
      'password',
      'private_key_path',
      'remote_path',
      'filename_template',
      'file_mode',
      'max_records',
      'max_time',
      'max_bytes',
      'max_index',
    ])
      expect(props(snk)).toHaveProperty(f);
    expect(props(src).port!.default).toBe(22);
    expect(props(src).file_pattern!.default).toBe('*');
    expect(props(snk).filename_template!.default).toBe('{pipeline}_{timestamp}.bin');
    expect(props(snk).file_mode!.default).toBe('append');
    expect(props(snk).max_index!.default).toBe(99999);
    expect(props(src).host_key_check!.default).toBe('accept-new');
  });
});
