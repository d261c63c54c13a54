// sftp-transfer: about 1 GB of PM XML (200 generated 32.435 files of about 5 MB, made once into
// .bench-data/) fetched from a private OpenSSH server (test/connectors/peers/sshd.ts: sshd with
// internal-sftp on a free loopback port, key login) by the sftp source into local files, one output
// file per input (serializer bytes with encoding none both ways: the bytes pass unchanged, the
// cheapest pipeline there is), next to OpenSSH's own `sftp -b` client getting the same directory
// (`get -r`) from the same server in the same run, and the same pipeline reading the directory
// locally (what the pipeline costs without SFTP). Every output file is checked against its input's
// size. Figures: MB/s of each, the ratio ours / OpenSSH (issue target >= 0.7), CPU seconds of our
// process and of the sftp client, and run.ts's peak RSS of our process (target under 250 MB).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { MemoryProcessedFiles } from '../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../src/observability/log.js';
import { sshdServer, type SshdServer } from '../test/connectors/peers/sshd.js';
import { DATA_DIR } from './data.js';
import { timedRun } from './pipeline.js';
import { writePmXml } from './pm-xml-scenarios.js';
import type { Measured, Scenario } from './scenarios.js';

const run = promisify(execFile);

const FILES = Number(process.env.BENCH_SFTP_FILES ?? 200);
/** Generation target per file; the generator finishes its last measInfo past it: 4.2-6 MB, about 5 MB on average. */
const FILE_BYTES = 4 * 1024 * 1024;
const inputDir = () => join(DATA_DIR, `sftp-pm-${FILES}x${FILE_BYTES}`);
const nameOf = (i: number) => `A20261121.1000+0000-1015+0000_gNB-${String(i).padStart(4, '0')}.xml`;

/** The input files, generated once (each a complete 32.435 document of about 5 MB, its own seed). */
async function inputFiles(): Promise<string> {
  const dir = inputDir();
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < FILES; i++) {
    const file = join(dir, nameOf(i));
    if (existsSync(file)) continue;
    await writePmXml(`${file}.part`, FILE_BYTES, i + 1);
    renameSync(`${file}.part`, file);
  }
  return dir;
}

/** Total bytes of the files in `dir` (recursively), and their count; fails when a file's size differs from the input's. */
function compare(input: string, output: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  for (const name of readdirSync(input)) {
    const size = statSync(join(input, name)).size;
    const got = statSync(join(output, name), { throwIfNoEntry: false })?.size;
    if (got !== size) throw new Error(`${output}/${name}: ${got ?? 'missing'} bytes, expected ${size}`);
    bytes += size;
    files++;
  }
  return { bytes, files };
}

/** One manual pipeline run: `source` (a YAML flow mapping) -> bytes -> one local file per input in `out`. */
async function leg(name: string, source: string, out: string): Promise<{ seconds: number; cpuSeconds: number; records: number }> {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const { record, seconds, cpuSeconds } = await timedRun(
    `
version: "1"
pipeline:
  name: ${name}
  schedule: { type: manual }
  source: ${source}
  serializer_in: { type: bytes, encoding: none }
  serializer_out: { type: bytes, encoding: none }
  sinks:
    - { type: local, path: ${JSON.stringify(out)}, filename_template: '{source_filename}', file_mode: single }
`,
    { log: silentLogger, processed: new MemoryProcessedFiles() },
  );
  if (record.status !== 'success' || record.records_in !== FILES) throw new Error(`bench run ${name} failed: ${JSON.stringify(record)}`);
  return { seconds, cpuSeconds, records: record.records_in };
}

/** OpenSSH's sftp client in batch mode (its defaults: 64 requests of 32 KiB in flight); wall and CPU seconds of the client. */
async function opensshGet(server: SshdServer, input: string, out: string, knownHosts: string): Promise<{ seconds: number; cpuSeconds: number }> {
  const batch = join(server.dir, 'bench.batch');
  writeFileSync(batch, `get -r ${input} ${out}\n`);
  const sftp = [
    'sftp',
    '-q',
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
  ];
  const t0 = performance.now();
  // bash's `times` prints the CPU time of its children (user, system) on its second line.
  const { stdout } = await run('bash', ['-c', `"$@" > /dev/null && times`, 'bash', ...sftp], { maxBuffer: 1 << 24 });
  const seconds = (performance.now() - t0) / 1000;
  const secs = (t: string) => Number(/(\d+)m([\d.]+)s/.exec(t)![1]) * 60 + Number(/(\d+)m([\d.]+)s/.exec(t)![2]);
  const [user, sys] = stdout.trim().split('\n').at(-1)!.split(/\s+/);
  return { seconds, cpuSeconds: secs(user!) + secs(sys!) };
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));

export const sftpTransfer: Scenario = {
  prepare: async () => void (await inputFiles()),
  async run(): Promise<Measured> {
    const input = await inputFiles();
    const server = await sshdServer();
    try {
      const knownHosts = join(server.dir, 'known_hosts');
      const refOut = join(DATA_DIR, 'out', 'sftp-transfer-openssh');
      rmSync(refOut, { recursive: true, force: true });
      mkdirSync(refOut, { recursive: true });
      const ref = await opensshGet(server, input, refOut, knownHosts);
      const { bytes, files } = compare(input, join(refOut, basename(input)));
      rmSync(refOut, { recursive: true, force: true });

      const out = join(DATA_DIR, 'out', 'sftp-transfer');
      const ours = await leg(
        'bench-sftp-transfer',
        `{ type: sftp, host: 127.0.0.1, port: ${server.port}, username: ${server.user}, private_key_path: ${JSON.stringify(server.keyPath)}, known_hosts: ${JSON.stringify(knownHosts)}, remote_path: ${JSON.stringify(input)}, file_pattern: '*.xml' }`,
        out,
      );
      compare(input, out);
      // The same pipeline from the local directory: what it costs without SFTP.
      const local = await leg('bench-sftp-transfer-local', `{ type: local, path: ${JSON.stringify(input)}, file_pattern: '*.xml' }`, out);
      compare(input, out);
      rmSync(out, { recursive: true, force: true });
      const mb = bytes / 1e6;
      return {
        files,
        input_mb: Math.round(mb),
        records: ours.records,
        seconds: round(ours.seconds, 2),
        mb_per_sec: round(mb / ours.seconds),
        cpu_seconds: round(ours.cpuSeconds),
        openssh_seconds: round(ref.seconds, 2),
        openssh_mb_per_sec: round(mb / ref.seconds),
        openssh_cpu_seconds: round(ref.cpuSeconds),
        ratio: round(ref.seconds / ours.seconds, 2),
        local_mb_per_sec: round(mb / local.seconds),
        local_cpu_seconds: round(local.cpuSeconds),
      };
    } finally {
      await server.stop();
    }
  },
};
