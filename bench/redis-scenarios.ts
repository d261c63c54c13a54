// redis-roundtrip: 200,000 interface records through a private redis-server (no persistence), each
// way as a real pipeline run: local NDJSON -> redis sink (list: one RPUSH per batch), then redis
// source (list, batch schedule: LMOVE into the processing list, LREM after delivery, both by
// script) -> local NDJSON; the same for stream mode (XADD by script; XRANGE, last ID stored); and
// local -> local, what the pipeline costs without Redis. Beside them, redis-benchmark on the same
// server with one connection and the same pipelining: the commands alone (RPUSH of single
// elements, LMOVE, LREM), i.e. what the protocol allows one client. CPU seconds of our process are
// printed beside each leg: steadier than wall time on a shared machine.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DATA_DIR, ndjsonFile } from './data.js';
import { manualLeg } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';
import { freePort } from '../test/helpers/net.js';

const RECORDS = 200_000;
/** Records per source round trip (the source's `count`) and pipelined requests of redis-benchmark. */
const COUNT = 100;
const run = promisify(execFile);

async function startRedis(): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-redis-'));
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const end = Date.now() + 10_000;
  for (;;) {
    const open = await new Promise<boolean>((r) => {
      const s = tcpConnect({ host: '127.0.0.1', port }, () => (s.destroy(), r(true)));
      s.on('error', () => r(false));
    });
    if (open) break;
    if (Date.now() > end || child.exitCode !== null) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 30));
  }
  return {
    port,
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const leg = (name: string, source: string, sink: string, serializerIn: string, serializerOut: string) =>
  manualLeg(name, source, sink, serializerIn, serializerOut, RECORDS);

/** Requests per second of one redis-benchmark command line (1 connection, COUNT pipelined). */
async function benchmark(port: number, args: string[]): Promise<number> {
  const { stdout } = await run('redis-benchmark', ['-p', String(port), '-c', '1', '-n', String(RECORDS), '-P', String(COUNT), '--csv', ...args]);
  const last = stdout.trim().split('\n').at(-1)!;
  return Number(JSON.parse(`[${last}]`)[1]);
}

export const redisRoundtrip: Scenario = {
  prepare: async () => void (await ndjsonFile(RECORDS)),
  async run(): Promise<Measured> {
    const input = await ndjsonFile(RECORDS);
    const redis = await startRedis();
    const out: Measured = { records: RECORDS, count: COUNT };
    try {
      const server = `host: 127.0.0.1, port: ${redis.port}`;
      for (const mode of ['list', 'stream'] as const) {
        const dir = join(DATA_DIR, 'out', `redis-roundtrip-${mode}`);
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        const key = `bench:${mode}`;
        const write = await leg(
          `redis-write-${mode}`,
          `{ type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: '*.ndjson' }`,
          `{ type: redis, ${server}, key: '${key}', mode: ${mode} }`,
          '{ type: ndjson }',
          '{ type: json }',
        );
        const read = await leg(
          `redis-read-${mode}`,
          `{ type: redis, ${server}, key: '${key}', mode: ${mode}, count: ${COUNT} }`,
          `{ type: local, path: ${JSON.stringify(dir)}, filename_template: 'out.ndjson' }`,
          '{ type: json }',
          '{ type: ndjson }',
        );
        out[`${mode}_write_records_per_sec`] = Math.round(RECORDS / write.seconds);
        out[`${mode}_write_cpu_s`] = Number(write.cpuSeconds.toFixed(2));
        out[`${mode}_read_records_per_sec`] = Math.round(RECORDS / read.seconds);
        out[`${mode}_read_cpu_s`] = Number(read.cpuSeconds.toFixed(2));
      }
      // The same records local NDJSON -> local NDJSON: what the pipeline costs without Redis.
      const localOut = join(DATA_DIR, 'out', 'redis-roundtrip-local');
      rmSync(localOut, { recursive: true, force: true });
      mkdirSync(localOut, { recursive: true });
      const local = await leg(
        'redis-local',
        `{ type: local, path: ${JSON.stringify(dirname(input))}, file_pattern: '*.ndjson' }`,
        `{ type: local, path: ${JSON.stringify(localOut)}, filename_template: 'out.ndjson' }`,
        '{ type: ndjson }',
        '{ type: ndjson }',
      );
      out.local_records_per_sec = Math.round(RECORDS / local.seconds);
      out.local_cpu_s = Number(local.cpuSeconds.toFixed(2));
      // The commands alone, 120-byte values like the records: what one connection gets from this server.
      // (LREM needs identical values at the head, as acknowledgements in delivery order find them.)
      const value = 'x'.repeat(120);
      const rpush = await benchmark(redis.port, ['-d', '120', '-t', 'rpush']);
      const lmove = await benchmark(redis.port, ['LMOVE', 'mylist', 'moved', 'LEFT', 'RIGHT']);
      await benchmark(redis.port, ['RPUSH', 'processing', value]);
      const lrem = await benchmark(redis.port, ['LREM', 'processing', '1', value]);
      out.benchmark_rpush_per_sec = Math.round(rpush);
      out.benchmark_lmove_per_sec = Math.round(lmove);
      out.benchmark_lrem_per_sec = Math.round(lrem);
      // One item read = one LMOVE + one LREM.
      out.benchmark_list_read_per_sec = Math.round(1 / (1 / lmove + 1 / lrem));
      out.list_read_ratio = Number((Number(out.list_read_records_per_sec) / Number(out.benchmark_list_read_per_sec)).toFixed(2));
    } finally {
      await redis.stop();
    }
    return out;
  },
};
