// kill -9 in the middle of `svc run`: the input file must stay where it is and must not be
// remembered as processed, so the next run reads it again (at-least-once; "Nothing is lost").
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../src/engine/run-record.js';
import { tempDir } from '../helpers/fs.js';
import { until } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SVC = ['--import', 'tsx', 'src/cli/main.ts'];
const LINES = 200_000;

const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);

describe('svc run: crash safety', () => {
  it('kill -9 mid-run leaves the input in place and unprocessed; the next run reads it', async () => {
    const dir = tempDir('svc-crash-');
    const state = join(dir, 'state');
    const inDir = join(dir, 'in');
    const input = join(inDir, 'big.ndjson');
    const output = join(dir, 'out', 'out.ndjson');
    mkdirSync(inDir);
    let text = '';
    for (let i = 0; i < LINES; i++) text += `{"i":${i},"pad":"xxxxxxxxxxxxxxxx"}\n`;
    writeFileSync(input, text);

    const yaml = (slow: boolean) => `version: "1"
pipeline:
  name: crash
  schedule: { type: manual }
  skip_processed: true
  source: { type: local, path: ${JSON.stringify(inDir)}, file_pattern: "*.ndjson", move_after_read: ${JSON.stringify(join(dir, 'done'))} }
  serializer_in: { type: ndjson }
  serializer_out: { type: ndjson }
${slow ? '  record_chunk_size: 100\n  rate_limit_rps: 50\n' : ''}  sinks:
    - { type: local, path: ${JSON.stringify(join(dir, 'out'))}, filename_template: out.ndjson }
`;
    writeFileSync(join(dir, 'slow.yaml'), yaml(true));
    writeFileSync(join(dir, 'fast.yaml'), yaml(false));
    const env = { ...process.env, SVC_STATE_DIR: state, SVC_LOG_LEVEL: 'ERROR' };

    // 2000 writes of 100 records at 50 writes/s: about 40 s if left alone.
    const child = spawn(process.execPath, [...SVC, 'run', join(dir, 'slow.yaml')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    let early: { code: number | null } | undefined;
    void exited.then((e) => (early = e));

    // Kill once the sink has written past the rate limiter's initial burst of 50 writes (~5000 lines).
    await until(() => size(output) >= 250_000 || early, 12_000, 'the sink to write 250,000 bytes (or the run to end)');
    expect(early, 'the run ended before the kill').toBeUndefined();
    expect(size(output), 'the sink did not write enough in time').toBeGreaterThanOrEqual(250_000);
    child.kill('SIGKILL');
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(stdout).toBe(''); // no run record: the process died mid-run

    const written = readFileSync(output, 'utf8').split('\n').filter(Boolean).length;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(LINES);
    // Not moved, not remembered.
    expect(existsSync(input)).toBe(true);
    expect(statSync(input).size).toBe(Buffer.byteLength(text));
    expect(existsSync(join(dir, 'done', 'big.ndjson'))).toBe(false);
    const stateFile = join(state, 'crash.processed.jsonl');
    if (existsSync(stateFile)) expect(readFileSync(stateFile, 'utf8')).not.toContain(input);

    // The next run (same pipeline, skip_processed on) reads the whole file again, then moves it.
    const again = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const c = spawn(process.execPath, [...SVC, 'run', join(dir, 'fast.yaml')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      c.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      c.on('close', (code) => resolve({ code, stdout: out }));
    });
    expect(again.code).toBe(0);
    const rec = JSON.parse(again.stdout) as RunRecord;
    expect(rec).toMatchObject({ status: 'success', records_in: LINES, records_out: LINES, records_skipped: 0, bytes_in: Buffer.byteLength(text) });
    expect(existsSync(input)).toBe(false);
    expect(existsSync(join(dir, 'done', 'big.ndjson'))).toBe(true);
    expect(readFileSync(stateFile, 'utf8')).toContain(JSON.stringify(input).slice(1, -1));

    // At least once: every record is in the output (some twice, from the killed run).
    const ids = new Set(
      readFileSync(output, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { i: number }).i),
    );
    expect(ids.size).toBe(LINES);
  }, 30_000);
});
