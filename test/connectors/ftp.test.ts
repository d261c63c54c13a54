// The ftp connector: the shared conformance suite against a private pure-ftpd (source and sink; the
// sink's disruption is a restart of the server), then what it does not cover: lint, login and path
// errors, file selection, the three file-done guards (MLSD dates, SIZE and MDTM), skip_processed,
// move (a taken name is numbered, never replaced) and delete after read, a connection dropped in the
// middle of a file (left in place, read once by the next run), large files streamed with bounded
// memory, explicit FTPS, and the sink's atomic publish and its cut-back of an append cut short.
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadComponent } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { encoderFor } from '../../src/engine/plan.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { runPipeline, type RunTelemetry } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import ftpSink from '../../src/plugins/connectors/ftp/sink.js';
import ftpSource from '../../src/plugins/connectors/ftp/source.js';
import { registry } from '../../src/plugins/registry.js';
import type { ConnectionState, ProcessedFiles } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { checkSequence, conformance, uniqueChannel, type Cfg, type Rec } from './conformance.js';
import { loadPipeline, outputRecords, seqBodies } from './helpers.js';
import { collectJson, ftpDir, ftpProxy, publishedFiles, publishJson, pureFtpd, pureFtpdFixture, putFile, type PureFtpd } from './peers/pure-ftpd.js';
import { pace } from '../helpers/wait.js';

conformance(pureFtpdFixture);

let server: PureFtpd;
beforeAll(async () => {
  server = await pureFtpd();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const login = (user = server.user): Cfg => ({ type: 'ftp', host: server.host, port: server.port, username: user, password: server.password });
const jsonArray = (from: number, n: number, pad = 16) => `[${seqBodies(from, n, { pad: 'x'.repeat(pad) }).join(',')}]`;
const seqs = (records: Rec[]) => records.map((r) => r.seq as number).sort((a, b) => a - b);

function validated(kind: 'source' | 'sink', cfg: Cfg) {
  const r = loadComponent(kind, cfg, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

/** One manual run from an ftp source into NDJSON files (one per source file, named after it). */
async function sourceRun(name: string, source: Cfg, opts: { processed?: ProcessedFiles; out?: string; extra?: Cfg; sinks?: Cfg[] } = {}) {
  const out = opts.out ?? tempDir('svc-ftp-out-');
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c === 'source' && states.push(s)) };
  const config = loadPipeline({
    name,
    schedule: { type: 'manual' },
    source: { ...login(), ...source },
    serializer_in: { type: 'json' },
    serializer_out: { type: 'ndjson' },
    sinks: opts.sinks ?? [{ type: 'local', path: out, filename_template: '{source_filename}.ndjson' }],
    ...opts.extra,
  });
  const rec = await runPipeline(config, { telemetry, log: silentLogger, processed: opts.processed ?? new MemoryProcessedFiles() });
  return { rec, out, states, records: () => outputRecords(out) };
}

/** One manual run from NDJSON records `{seq, pad}` (in `chunk`-record batches) into one ftp sink. */
async function sinkRun(name: string, sink: Cfg, n: number, opts: { chunk?: number; pad?: number; files?: number; extra?: Cfg } = {}) {
  const dir = tempDir('svc-ftp-in-');
  mkdirSync(join(dir, 'in'));
  const files = opts.files ?? 1;
  const per = Math.ceil(n / files);
  for (let f = 0; f < files; f++) {
    const lines = seqBodies(f * per, Math.min(per, n - f * per), { pad: 'x'.repeat(opts.pad ?? 16) });
    writeFileSync(join(dir, 'in', `in${f}.ndjson`), lines.map((b) => `${b}\n`).join(''));
  }
  const states: ConnectionState[] = [];
  const telemetry: RunTelemetry = { connection: (c, _t, s) => void (c !== 'source' && states.push(s)) };
  const config = loadPipeline({
    name,
    schedule: { type: 'manual' },
    source: { type: 'local', path: join(dir, 'in') },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks: [{ ...login(), ...sink }],
    record_chunk_size: opts.chunk,
    ...opts.extra,
  });
  const rec = await runPipeline(config, { telemetry, log: silentLogger, processed: new MemoryProcessedFiles() });
  return { rec, states };
}

describe('ftp: config', () => {
  const issues = (kind: 'source' | 'sink', cfg: Cfg) =>
    loadComponent(kind, { ...login(), ...cfg }, { env: {} }).diagnostics.map((d) => `${d.path}: ${d.message}`);

  it('refuses passive: false (the client speaks passive mode only), for source and sink', () => {
    for (const kind of ['source', 'sink'] as const) {
      const found = issues(kind, { passive: false });
      expect(found.join('\n')).toMatch(/passive: active mode \(PORT\) is not supported.*passive mode only/);
    }
  });

  it('rejects tls_ca_certs without secure, a move into the directory read, and a bad template', () => {
    expect(issues('source', { tls_ca_certs: '/etc/ca.pem' }).join('\n')).toMatch(/tls_ca_certs: applies with secure: true only/);
    expect(issues('source', { remote_path: '/in', move_after_read: '/in/' }).join('\n')).toMatch(/move_after_read: .*different directory/);
    expect(issues('source', { move_after_read: '/done', delete_after_read: true }).join('\n')).toMatch(/delete_after_read: .*exclude each other/);
    expect(issues('sink', { filename_template: '{nope}.json' }).join('\n')).toMatch(/filename_template: unknown token \{nope\}/);
    expect(issues('source', { password: undefined }).join('\n')).toMatch(/password/);
  });

  it('defaults: port 21 (the sink too, though doc 3 lists none for it), remote_path /, passive, no TLS, {pipeline}_{timestamp}', () => {
    const src = validated('source', { type: 'ftp', host: 'h', username: 'u', password: 'p' }) as Cfg;
    expect(src).toMatchObject({
      port: 21,
      remote_path: '/',
      file_pattern: '*',
      passive: true,
      secure: false,
      delete_after_read: false,
      skip_processed: false,
      file_stability_seconds: 0,
      file_min_age_seconds: 0,
    });
    const sink = validated('sink', { type: 'ftp', host: 'h', username: 'u', password: 'p' }) as Cfg;
    expect(sink).toMatchObject({ port: 21, remote_path: '/', filename_template: '{pipeline}_{timestamp}', passive: true, secure: false });
  });
});

describe('ftp source', () => {
  it('test(): a wrong password says to check the credentials, a missing remote_path says so', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, ch);
    const wrong = await testConnector('source', validated('source', { ...login(), password: 'not-the-password', remote_path: `/${ch}` }), { timeoutMs: 9000 });
    expect(wrong.ok).toBe(false);
    expect(wrong.error).toMatch(/^ftp: .*refused the login of 'svc'.*check username and password/);
    expect(wrong.error).not.toContain('not-the-password');
    const missing = await testConnector('source', validated('source', { ...login(), remote_path: `/${ch}/nowhere` }));
    expect(missing.error).toMatch(/remote_path \/.*\/nowhere is not a directory 'svc' can enter/);
  }, 20_000);

  it('a run on a missing remote_path fails with a clear error', async () => {
    const { rec } = await sourceRun('ftp-missing', { remote_path: '/no-such-dir' });
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/cannot list \/no-such-dir at 127\.0\.0\.1:\d+: not a directory/);
  });

  it('reads each matching file once, one unit per file, and skips hidden files and subdirectories', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, `${ch}/sub`);
    putFile(server, `${ch}/a.json`, jsonArray(0, 3));
    putFile(server, `${ch}/b.json`, jsonArray(3, 2));
    putFile(server, `${ch}/c.csv`, 'seq\n9\n');
    putFile(server, `${ch}/.hidden.json`, jsonArray(100, 1));
    putFile(server, `${ch}/sub/d.json`, jsonArray(200, 1));
    const { rec, out, records, states } = await sourceRun('ftp-select', { remote_path: `/${ch}`, file_pattern: '*.json' });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(rec.errors).toEqual([]);
    expect(seqs(records())).toEqual([0, 1, 2, 3, 4]);
    expect(readdirSync(out).sort()).toEqual(['a.json.ndjson', 'b.json.ndjson']);
    expect(states.slice(0, 2)).toEqual(['connecting', 'connected']);
    // Nothing finalizes by default: the files are still there.
    expect(publishedFiles(join(server.root, ch))).toEqual(['a.json', 'b.json', 'c.csv', 'sub']);
  });

  it('relative remote_path and move_after_read start at the login directory', async () => {
    const ch = uniqueChannel('ftp');
    publishJson(server, ch, seqBodies(0, 4), 2);
    const { rec, records } = await sourceRun('ftp-relative', { remote_path: ch, move_after_read: `${ch}-done` });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(seqs(records())).toEqual([0, 1, 2, 3]);
    expect(publishedFiles(join(server.root, `${ch}-done`))).toEqual(['batch-0000.json', 'batch-0001.json']);
  });

  describe('file-done guards', () => {
    it('file_min_age_seconds skips files younger than that, by the MLSD date', async () => {
      const ch = uniqueChannel('ftp');
      ftpDir(server, ch);
      putFile(server, `${ch}/old.json`, jsonArray(0, 2), new Date(Date.now() - 3600_000));
      putFile(server, `${ch}/new.json`, jsonArray(10, 2));
      const { rec, records } = await sourceRun('ftp-min-age', { remote_path: `/${ch}`, file_min_age_seconds: 600 });
      expect(seqs(records())).toEqual([0, 1]);
      expect(rec.errors).toEqual(['skipped 1 file younger than file_min_age_seconds (600 s)']);
    });

    it('without MLSD (LIST, no dates), file_min_age_seconds takes the date from MDTM', async () => {
      const ch = uniqueChannel('ftp');
      ftpDir(server, ch);
      putFile(server, `${ch}/old.json`, jsonArray(0, 2), new Date(Date.now() - 3600_000));
      putFile(server, `${ch}/new.json`, jsonArray(10, 2));
      const proxy = await ftpProxy(server, { hideFeatures: ['MLST', 'MLSD'] });
      try {
        const { rec, records } = await sourceRun('ftp-min-age-list', { port: proxy.port, remote_path: `/${ch}`, file_min_age_seconds: 600 });
        expect(seqs(records())).toEqual([0, 1]);
        expect(rec.errors).toEqual(['skipped 1 file younger than file_min_age_seconds (600 s)']);
        const verbs = proxy.commands().map((c) => c.split(' ')[0]);
        expect(verbs).not.toContain('MLSD');
        expect(verbs).toContain('LIST');
        expect(verbs.filter((v) => v === 'MDTM')).toHaveLength(2);
      } finally {
        await proxy.close();
      }
    });

    it('file_stability_seconds reads only files whose SIZE and MDTM did not change across the wait', async () => {
      const ch = uniqueChannel('ftp');
      ftpDir(server, ch);
      putFile(server, `${ch}/stable.json`, jsonArray(0, 2), new Date(Date.now() - 60_000));
      const growing = putFile(server, `${ch}/growing.json`, '[{"seq":50}', new Date(Date.now() - 60_000));
      const proxy = await ftpProxy(server);
      const running = sourceRun('ftp-stability', { port: proxy.port, remote_path: `/${ch}`, file_stability_seconds: 2 });
      await pace(900); // listed by now, re-checked at about 2 s
      appendFileSync(growing, ',{"seq":51}');
      const { rec, records } = await running;
      await proxy.close();
      expect(seqs(records())).toEqual([0, 1]);
      expect(rec.errors).toEqual(['skipped 1 file still changing after file_stability_seconds (2 s)']);
      // Listed by MLSD, re-checked with SIZE and MDTM (no second listing).
      const verbs = proxy.commands().map((c) => c.split(' ')[0]);
      expect(verbs.filter((v) => v === 'MLSD')).toHaveLength(1);
      expect(verbs.filter((v) => v === 'SIZE')).toHaveLength(2);
      expect(verbs.filter((v) => v === 'MDTM')).toHaveLength(2);
      // Finished: the next run reads it.
      appendFileSync(growing, ']');
      const again = await sourceRun('ftp-stability-2', { remote_path: `/${ch}`, file_pattern: 'growing.json' });
      expect(seqs(again.records())).toEqual([50, 51]);
    });

    it('file_done_suffix reads only names with the suffix and strips it from source_filename', async () => {
      const ch = uniqueChannel('ftp');
      ftpDir(server, ch);
      putFile(server, `${ch}/A1.json.done`, jsonArray(0, 2));
      putFile(server, `${ch}/A2.json`, jsonArray(10, 2));
      const { rec, out, records } = await sourceRun('ftp-done', {
        remote_path: `/${ch}`,
        file_pattern: 'A*.json',
        file_done_suffix: '.done',
        delete_after_read: true,
      });
      expect(rec.status).toBe('success');
      expect(seqs(records())).toEqual([0, 1]);
      expect(readdirSync(out)).toEqual(['A1.json.ndjson']);
      expect(publishedFiles(join(server.root, ch))).toEqual(['A2.json']);
    });
  });

  it('skip_processed: a delivered file is not read again until it changes', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, ch);
    putFile(server, `${ch}/a.json`, jsonArray(0, 2));
    const processed = new MemoryProcessedFiles();
    const first = await sourceRun('ftp-skip', { remote_path: `/${ch}`, skip_processed: true }, { processed });
    expect(seqs(first.records())).toEqual([0, 1]);
    const second = await sourceRun('ftp-skip', { remote_path: `/${ch}`, skip_processed: true }, { processed });
    expect(second.rec.records_in).toBe(0);
    expect(second.rec.errors).toEqual(['skipped 1 file already processed']);
    putFile(server, `${ch}/a.json`, jsonArray(5, 3)); // rewritten: another size
    const third = await sourceRun('ftp-skip', { remote_path: `/${ch}`, skip_processed: true }, { processed });
    expect(seqs(third.records())).toEqual([5, 6, 7]);
  });

  it('move_after_read: delivered files move; a name taken there is numbered, never replaced', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, ch);
    ftpDir(server, `${ch}-archive`);
    putFile(server, `${ch}-archive/a.json`, 'earlier');
    putFile(server, `${ch}-archive/a_1.json`, 'earlier too');
    putFile(server, `${ch}/a.json`, jsonArray(0, 2));
    putFile(server, `${ch}/b.json`, jsonArray(2, 2));
    const { rec, records } = await sourceRun('ftp-move', { remote_path: `/${ch}`, move_after_read: `/${ch}-archive/nested` });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(seqs(records())).toEqual([0, 1, 2, 3]);
    expect(publishedFiles(join(server.root, ch))).toEqual([]);
    expect(publishedFiles(join(server.root, `${ch}-archive/nested`))).toEqual(['a.json', 'b.json']);
    // Into a directory that holds a.json and a_1.json already.
    putFile(server, `${ch}/a.json`, jsonArray(4, 1));
    await sourceRun('ftp-move-2', { remote_path: `/${ch}`, move_after_read: `/${ch}-archive` });
    const archive = join(server.root, `${ch}-archive`);
    expect(publishedFiles(archive)).toEqual(['a.json', 'a_1.json', 'a_2.json', 'nested']);
    expect(readFileSync(join(archive, 'a.json'), 'utf8')).toBe('earlier');
    expect(readFileSync(join(archive, 'a_1.json'), 'utf8')).toBe('earlier too');
    expect(JSON.parse(readFileSync(join(archive, 'a_2.json'), 'utf8'))).toEqual([{ seq: 4, pad: 'x'.repeat(16) }]);
  });

  it('delete_after_read: delivered files are deleted; files whose records were not delivered stay', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, ch);
    putFile(server, `${ch}/a.json`, jsonArray(0, 2));
    // A sink that cannot write (nothing listens there): nothing delivered, nothing deleted.
    const failing = await sourceRun('ftp-delete-fail', { remote_path: `/${ch}`, delete_after_read: true }, { sinks: [{ ...login(), port: 1 }] });
    expect(failing.rec.records_out).toBe(0);
    expect(publishedFiles(join(server.root, ch))).toEqual(['a.json']);
    const ok = await sourceRun('ftp-delete', { remote_path: `/${ch}`, delete_after_read: true });
    expect(seqs(ok.records())).toEqual([0, 1]);
    expect(publishedFiles(join(server.root, ch))).toEqual([]);
  });

  it('a connection dropped in the middle of a file leaves it in place; the next run reads it once', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, ch);
    putFile(server, `${ch}/a.json`, jsonArray(0, 2));
    putFile(server, `${ch}/big.json`, jsonArray(100, 1500, 200)); // ~330 KB: about 5 s for the 64 KiB/s user
    putFile(server, `${ch}/c.json`, jsonArray(2, 2));
    const running = sourceRun('ftp-drop', { ...login(server.slowUser), remote_path: `/${ch}`, delete_after_read: true });
    // a.json takes well under a second; big.json is then halfway through its first seconds.
    await pace(2000);
    expect(server.dropSessions()).toBeGreaterThan(0);
    const first = await running;
    expect(first.rec.status, JSON.stringify(first.rec)).toBe('success');
    expect(first.rec.errors.join('\n')).toMatch(/big\.json: read failed: ftp: reading \/.*\/big\.json at 127\.0\.0\.1:\d+ broke off/);
    // The files around it were read (the source reconnected for c.json); big.json is untouched.
    expect(seqs(first.records())).toEqual([0, 1, 2, 3]);
    expect(first.states).toContain('disconnected');
    expect(publishedFiles(join(server.root, ch))).toEqual(['big.json']);
    const second = await sourceRun('ftp-drop-2', { remote_path: `/${ch}`, delete_after_read: true });
    expect(second.rec.status).toBe('success');
    expect(checkSequence(second.records(), 1600).missing.filter((s) => s >= 100)).toEqual([]);
    expect(second.records()).toHaveLength(1500);
    expect(publishedFiles(join(server.root, ch))).toEqual([]);
  }, 30_000);

  it('a data connection that ends cleanly in the middle of a file (the server thinks it sent all) fails the read: the file stays and is read whole next time', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, ch);
    putFile(server, `${ch}/big.json`, jsonArray(0, 1500, 200));
    const proxy = await ftpProxy(server);
    try {
      proxy.cutNext('download', 100_000);
      const first = await sourceRun('ftp-cut-read', { port: proxy.port, remote_path: `/${ch}`, delete_after_read: true });
      expect(proxy.cuts()).toBe(1);
      expect(first.rec.records_in).toBe(0); // no half-file parsed as if it were whole
      expect(first.rec.errors.join('\n')).toMatch(/big\.json: read failed: ftp: reading .*big\.json at 127\.0\.0\.1:\d+ broke off/);
      expect(publishedFiles(join(server.root, ch))).toEqual(['big.json']);
      const second = await sourceRun('ftp-cut-read-2', { port: proxy.port, remote_path: `/${ch}`, delete_after_read: true });
      expect(checkSequence(second.records(), 1500)).toEqual({ missing: [], duplicates: 0 });
      expect(publishedFiles(join(server.root, ch))).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('streams a large file: memory stays bounded while the pipeline waits, and every byte arrives', async () => {
    const ch = uniqueChannel('ftp');
    ftpDir(server, ch);
    const size = 48 * 1024 * 1024;
    putFile(server, `${ch}/large.bin`, Buffer.alloc(size, 0x61));
    const c = validated('source', { ...login(), remote_path: `/${ch}` });
    const stop = new AbortController();
    const source = ftpSource.create(c as never, {
      pipeline: 'ftp-large',
      log: silentLogger,
      signal: stop.signal,
      processed: new MemoryProcessedFiles(),
      skipProcessed: false,
    });
    try {
      let units = 0;
      for await (const unit of source.units(stop.signal)) {
        units++;
        expect(unit.size).toBe(size);
        const before = process.memoryUsage().arrayBuffers;
        let got = 0;
        let first = true;
        for await (const chunk of unit.read()) {
          got += chunk.length;
          if (first) {
            first = false;
            // A slow pipeline: a download held whole would be in memory by now.
            await pace(1500);
            expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * 1024 * 1024);
          }
        }
        expect(got).toBe(size);
        await unit.done?.(false);
      }
      expect(units).toBe(1);
    } finally {
      await source.close?.();
    }
  }, 60_000);
});

describe('ftp sink', () => {
  it('publishes atomically: a hidden temporary while writing, renamed whole; readers never see a partial file; no temporary left', async () => {
    const ch = uniqueChannel('ftp');
    const dir = join(server.root, ch);
    const collector = collectJson(dir);
    const hidden = new Set<string>();
    const watch = setInterval(() => {
      try {
        for (const n of readdirSync(dir)) if (n.startsWith('.')) hidden.add(n);
      } catch {
        // not made yet
      }
    }, 20);
    try {
      const { rec, states } = await sinkRun('ftp-atomic', { remote_path: `/${ch}` }, 2000, { chunk: 100, extra: { rate_limit_rps: 10 } });
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(states).toEqual(['connecting', 'connected']);
      const files = publishedFiles(dir);
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/^ftp-atomic_\d{8}T\d{6}Z$/);
      expect(checkSequence(collector.records(), 2000)).toEqual({ missing: [], duplicates: 0 });
      expect(collector.partial).toEqual([]);
      expect([...hidden].some((n) => n.startsWith(`.${files[0]}.`) && n.endsWith('.tmp'))).toBe(true);
      expect(readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual([]);
    } finally {
      clearInterval(watch);
      await collector.close();
    }
  });

  it('makes the directories of remote_path and of the template, one file per name', async () => {
    const ch = uniqueChannel('ftp');
    const { rec } = await sinkRun('ftp-dirs', { remote_path: `${ch}/deep/er`, filename_template: '{source_stem}/{pipeline}.json' }, 20, { files: 2 });
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    const base = join(server.root, ch, 'deep/er');
    expect(readdirSync(base).sort()).toEqual(['in0', 'in1']);
    const read = (stem: string) => JSON.parse(readFileSync(join(base, stem, 'ftp-dirs.json'), 'utf8')) as Rec[];
    expect(seqs(read('in0'))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(seqs(read('in1'))).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  it('each runtime flush publishes what was written; a name written again later in the run takes the next part', async () => {
    const ch = uniqueChannel('ftp');
    const cfg = validated('sink', { ...login(), remote_path: `/${ch}`, filename_template: 'out.json' });
    const encoder = encoderFor(registry, { type: 'json' });
    const sink = ftpSink.create(cfg as never, {
      pipeline: 'ftp-parts',
      log: silentLogger,
      signal: new AbortController().signal,
      processed: new MemoryProcessedFiles(),
      skipProcessed: false,
      encoder,
    });
    const batch = (from: number, n: number) => {
      const records = seqBodies(from, n).map((b) => JSON.parse(b.toString()) as Rec);
      return { payload: encoder.body(records), head: encoder.head(records), count: n, meta: { source_filename: `in${from}` } };
    };
    const dir = join(server.root, ch);
    await sink.open?.({ runId: 'r1', pipeline: 'ftp-parts', startedAt: new Date() });
    await sink.write(batch(0, 3));
    await sink.write(batch(3, 2));
    expect(publishedFiles(dir)).toEqual([]); // written, not yet published
    await sink.flush?.();
    expect(publishedFiles(dir)).toEqual(['out.json']);
    await sink.write(batch(5, 2));
    await sink.flush?.();
    await sink.close?.();
    expect(publishedFiles(dir)).toEqual(['out.json', 'out_00001.json']);
    const read = (n: string) => seqs(JSON.parse(readFileSync(join(dir, n), 'utf8')) as Rec[]);
    expect(read('out.json')).toEqual([0, 1, 2, 3, 4]);
    expect(read('out_00001.json')).toEqual([5, 6]);
    expect(readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('test(): checks remote_path can be written (a hidden probe), without leaving it', async () => {
    const ch = uniqueChannel('ftp');
    const ok = await testConnector('sink', validated('sink', { ...login(), remote_path: `/${ch}/out` }));
    expect(ok).toMatchObject({ ok: true, error: null });
    expect(readdirSync(join(server.root, ch, 'out'))).toEqual([]);
    putFile(server, `${ch}/file`, 'x');
    const bad = await testConnector('sink', validated('sink', { ...login(), remote_path: `/${ch}/file/sub` }));
    expect(bad.error).toMatch(/^ftp: 127\.0\.0\.1:\d+: remote_path \/.*\/file\/sub is not a directory 'svc' can enter or create/);
  });

  it('an append cut short is cut back (REST + STOR) before the batch is written again: no doubled records', async () => {
    const ch = uniqueChannel('ftp');
    const proxy = await ftpProxy(server);
    const collector = collectJson(join(server.root, ch));
    try {
      // Two batches of ~100 KB: the second one's APPE reaches the server with 30,000 bytes and a clean end, then the connection drops.
      proxy.cutNext('upload', 30_000, { skip: 1 });
      const { rec, states } = await sinkRun('ftp-cut', { port: proxy.port, remote_path: `/${ch}`, retry_count: 3, retry_delay_seconds: 0.2 }, 200, {
        chunk: 100,
        pad: 1000,
      });
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(rec.errors).toEqual([]);
      expect(proxy.cuts()).toBe(1);
      expect(states).toEqual(['connecting', 'connected', 'disconnected', 'connecting', 'connected']);
      // The temporary held the first batch and 30,000 bytes of the second: cut back to the first batch.
      const cmds = proxy.commands();
      const rest = cmds.findIndex((c) => /^REST \d+$/.test(c));
      expect(rest, cmds.join('\n')).toBeGreaterThan(0);
      expect(cmds.slice(rest - 1, rest + 4).map((c) => c.split(' ')[0])).toEqual(['SIZE', 'REST', 'EPSV', 'STOR', 'SIZE']);
      expect(checkSequence(collector.records(), 200)).toEqual({ missing: [], duplicates: 0 });
      expect(collector.partial).toEqual([]);
      expect(readdirSync(join(server.root, ch)).filter((n) => n.startsWith('.'))).toEqual([]);
    } finally {
      await collector.close();
      await proxy.close();
    }
  });
});

describe('ftp over explicit TLS (pure-ftpd requiring TLS on control and data connections)', () => {
  let tls: PureFtpd;
  beforeAll(async () => {
    tls = await pureFtpd({ tls: true });
  }, 60_000);
  afterAll(async () => {
    await tls?.stop();
  });
  const tlsLogin = (): Cfg => ({ type: 'ftp', host: tls.host, port: tls.port, username: tls.user, password: tls.password });

  it('secure: true with tls_ca_certs reads and writes; secure: false or an unknown CA fail with what to set', async () => {
    const ch = uniqueChannel('ftp');
    const secure = { ...tlsLogin(), secure: true, tls_ca_certs: tls.certFile };
    publishJson(tls, ch, seqBodies(0, 5));
    const read = await sourceRun('ftp-tls', { ...secure, remote_path: `/${ch}` });
    expect(read.rec.status, JSON.stringify(read.rec)).toBe('success');
    expect(seqs(read.records())).toEqual([0, 1, 2, 3, 4]);
    const wrote = await sinkRun('ftp-tls-sink', { ...secure, port: tls.port, host: tls.host, remote_path: `/${ch}-out` }, 10);
    expect(wrote.rec.status, JSON.stringify(wrote.rec)).toBe('success');
    expect(seqs(collectJson(join(tls.root, `${ch}-out`)).records())).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);

    const plain = await testConnector('source', validated('source', { ...tlsLogin(), remote_path: `/${ch}` }), { timeoutMs: 8000 });
    expect(plain.error).toMatch(/^ftp: .*set secure: true/);
    const unknownCa = await testConnector('sink', validated('sink', { ...tlsLogin(), secure: true }), { timeoutMs: 8000 });
    expect(unknownCa.error).toMatch(/^ftp: TLS with 127\.0\.0\.1:\d+ failed: .*set tls_ca_certs to the CA that signed the server certificate/);
  }, 30_000);
});
