// The flow tests' peers: pcaps written here (Ethernet, IPv4, TCP or UDP with known addresses, ports
// and sizes), Debian's softflowd reading them and exporting NetFlow v5, v9 or IPFIX, nfdump's
// nfcapd decoding the same datagrams independently, and pmacct's pmacctd (sfprobe) and sfacctd for
// sFlow. Each peer runs on a free loopback port with its own files and is stopped by its PID.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { connect } from 'node:net';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runPipeline, type RunTelemetry } from '../../../src/engine/runner.js';
import { silentLogger } from '../../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../../src/plugins/connector-runtime/processed-files.js';
import type { ConnectionState } from '../../../src/plugins/types.js';
import { tempDir } from '../../helpers/fs.js';
import { until } from '../../helpers/wait.js';
import { loadPipeline, outputRecords } from '../helpers.js';

/** One flow of the generated capture: `packets` packets of `payload` bytes of transport payload each. */
export interface PcapFlow {
  src: string;
  dst: string;
  protocol: 6 | 17;
  sport: number;
  dport: number;
  packets: number;
  payload: number;
}

/** Bytes of one packet at the IP layer (what flow exporters count as octets): IPv4 20 + TCP 20 / UDP 8 + payload. */
export const ipBytes = (f: PcapFlow) => 20 + (f.protocol === 6 ? 20 : 8) + f.payload;

const ip4 = (s: string) => Buffer.from(s.split('.').map(Number));

function checksum(b: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < b.length; i += 2) sum += b.readUInt16BE(i);
  if (b.length % 2) sum += b[b.length - 1]! << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return ~sum & 0xffff;
}

/** One Ethernet frame of the flow (TCP with ACK set, so exporters see an established flow). */
export function packetOf(f: PcapFlow, seq: number): Buffer {
  const l4 = Buffer.alloc((f.protocol === 6 ? 20 : 8) + f.payload, 0x61);
  l4.writeUInt16BE(f.sport, 0);
  l4.writeUInt16BE(f.dport, 2);
  if (f.protocol === 6) {
    l4.writeUInt32BE(1000 + seq * f.payload, 4);
    l4.writeUInt32BE(1, 8);
    l4[12] = 5 << 4;
    l4[13] = 0x18; // PSH ACK
    l4.writeUInt16BE(65535, 14);
    l4.writeUInt16BE(0, 16);
    l4.writeUInt16BE(0, 18);
  } else {
    l4.writeUInt16BE(l4.length, 4);
    l4.writeUInt16BE(0, 6);
  }
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip.writeUInt16BE(20 + l4.length, 2);
  ip.writeUInt16BE(seq & 0xffff, 4);
  ip[8] = 64;
  ip[9] = f.protocol;
  ip4(f.src).copy(ip, 12);
  ip4(f.dst).copy(ip, 16);
  ip.writeUInt16BE(checksum(ip), 10);
  const eth = Buffer.from('0200000000020200000000010800', 'hex');
  return Buffer.concat([eth, ip, l4]);
}

/** A classic pcap file (little-endian, microseconds, Ethernet) of the flows' packets, interleaved, 10 ms apart from `startSec`. */
export function pcapOf(flows: PcapFlow[], startSec = 1_780_000_000): Buffer {
  const head = Buffer.alloc(24);
  head.writeUInt32LE(0xa1b2c3d4, 0);
  head.writeUInt16LE(2, 4);
  head.writeUInt16LE(4, 6);
  head.writeUInt32LE(65535, 16);
  head.writeUInt32LE(1, 20);
  const parts: Buffer[] = [head];
  let t = 0;
  const most = Math.max(...flows.map((f) => f.packets));
  for (let k = 0; k < most; k++) {
    for (const f of flows) {
      if (k >= f.packets) continue;
      const p = packetOf(f, k);
      const rec = Buffer.alloc(16);
      rec.writeUInt32LE(startSec + Math.floor(t / 1000), 0);
      rec.writeUInt32LE((t % 1000) * 1000, 4);
      rec.writeUInt32LE(p.length, 8);
      rec.writeUInt32LE(p.length, 12);
      parts.push(rec, p);
      t += 10;
    }
  }
  return Buffer.concat(parts);
}

/** `n` flows with distinct addresses and ports, TCP and UDP alternating, sizes that differ. */
export function sampleFlows(n: number): PcapFlow[] {
  return Array.from({ length: n }, (_, i) => ({
    src: `10.1.${i >> 8}.${(i & 0xff) + 1}`,
    dst: `192.0.2.${(i % 250) + 1}`,
    protocol: i % 2 ? 17 : 6,
    sport: 20_000 + i,
    dport: i % 2 ? 53 : 443,
    packets: 1 + (i % 7),
    payload: 10 + ((i * 37) % 900),
  }));
}

/** A UDP port of loopback that was free a moment ago. */
export async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/**
 * Runs softflowd over a pcap, exporting `version` (5, 9, 10) to 127.0.0.1:port; resolves when it
 * exits, which it does at the end of the file after exporting every flow. Debian's softflowd 1.1.0
 * with -r blocks in accept() on its control socket at each turn of its main loop (strace shows it),
 * so the control socket is poked, as `softflowctl statistics` would, until it has read the file.
 */
export async function softflowd(pcap: string, port: number, version: 5 | 9 | 10, dir: string): Promise<void> {
  const ctl = join(dir, `softflowd-${port}.ctl`);
  const child = spawn('softflowd', ['-r', pcap, '-n', `127.0.0.1:${port}`, '-v', String(version), '-d', '-p', join(dir, `softflowd-${port}.pid`), '-c', ctl], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  let done = false;
  void exited.then(() => (done = true));
  const poke = () =>
    new Promise<void>((r) => {
      const s = connect(ctl);
      s.on('error', () => r());
      s.on('connect', () => s.end('statistics\n'));
      s.on('data', () => {});
      s.on('close', () => r());
    });
  try {
    await until(async () => done || (await poke(), done), 30_000, 'softflowd to read the pcap and exit', 50);
  } finally {
    if (!done) child.kill('SIGKILL');
  }
  const code = await exited;
  if (code !== 0) throw new Error(`softflowd exited with ${code}: ${err}`);
}

/** A datagram relay: what arrives on its port is sent to every target port (one exporter run feeds two decoders). */
export async function tee(targets: number[]): Promise<{ port: number; count: () => number; close: () => Promise<void> }> {
  const s: Socket = createSocket('udp4');
  let n = 0;
  const out = createSocket('udp4');
  s.on('message', (m) => {
    n++;
    for (const p of targets) out.send(m, p, '127.0.0.1');
  });
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return {
    port: s.address().port,
    count: () => n,
    close: async () => {
      await new Promise<void>((r) => s.close(() => r()));
      await new Promise<void>((r) => out.close(() => r()));
    },
  };
}

export interface Nfcapd {
  port: number;
  /** Stops nfcapd (SIGTERM: it writes its file) and returns its flows as nfdump prints them. */
  stop(): Promise<NfdumpFlow[]>;
}

export interface NfdumpFlow {
  src: string;
  dst: string;
  sport: number;
  dport: number;
  protocol: number;
  packets: number;
  bytes: number;
  start: string;
  end: string;
}

/** nfdump's nfcapd on a free loopback port, writing into `dir`. */
export async function startNfcapd(dir: string): Promise<Nfcapd> {
  const port = await freeUdpPort();
  // stdbuf: nfcapd's stdout is block-buffered into a pipe, and its start-up line is what is awaited.
  const child: ChildProcess = spawn('stdbuf', ['-oL', '-eL', 'nfcapd', '-b', '127.0.0.1', '-p', String(port), '-w', dir, '-P', join(dir, 'nfcapd.pid')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await until(() => /Startup nfcapd/.test(log) || child.exitCode !== null, 10_000, 'nfcapd started');
  if (child.exitCode !== null) throw new Error(`nfcapd exited: ${log}`);
  return {
    port,
    async stop() {
      process.kill(child.pid!, 'SIGTERM');
      await exited;
      return nfdumpFlows(dir);
    },
  };
}

/** The flows of every nfcapd file in `dir`, through `nfdump -o csv`. */
export function nfdumpFlows(dir: string): NfdumpFlow[] {
  const files = readdirSync(dir).filter((f) => f.startsWith('nfcapd.'));
  const flows: NfdumpFlow[] = [];
  for (const f of files) {
    const r = spawnSync('nfdump', ['-r', join(dir, f), '-q', '-o', 'fmt:%ts|%te|%sa|%da|%sp|%dp|%pr|%pkt|%byt', '-N'], {
      encoding: 'utf8',
      env: { ...process.env, TZ: 'UTC' },
    });
    if (r.status !== 0) throw new Error(`nfdump failed: ${r.stderr}`);
    for (const line of r.stdout.split('\n')) {
      const p = line.split('|').map((x) => x.trim());
      if (p.length < 9) continue;
      flows.push({
        start: p[0]!,
        end: p[1]!,
        src: p[2]!,
        dst: p[3]!,
        sport: Number(p[4]),
        dport: Number(p[5]),
        protocol: /^\d+$/.test(p[6]!) ? Number(p[6]) : (({ TCP: 6, UDP: 17, ICMP: 1 } as Record<string, number>)[p[6]!] ?? -1),
        packets: Number(p[7]),
        bytes: Number(p[8]),
      });
    }
  }
  return flows;
}

export function writePcap(dir: string, flows: PcapFlow[]): string {
  const file = join(dir, 'flows.pcap');
  writeFileSync(file, pcapOf(flows));
  return file;
}

/** A stream pipeline from a flow source on a free loopback port into NDJSON, with a DLQ beside it. */
/** The flow counters the events of flowPipeline() stand for. */
const FLOW_EVENTS: Record<string, 'gap' | 'restart' | 'enrich_failure'> = {
  svc_flow_sequence_gaps_total: 'gap',
  svc_flow_exporter_restarts_total: 'restart',
  svc_flow_enrich_failures_total: 'enrich_failure',
};

export async function flowPipeline(source: Record<string, unknown> = {}, opts: { name?: string } = {}) {
  const port = (source.port as number | undefined) ?? (await freeUdpPort());
  const out = tempDir('svc-flow-out-');
  const dlq = tempDir('svc-flow-dlq-');
  const states: ConnectionState[] = [];
  const events: { event: 'gap' | 'restart' | 'enrich_failure'; exporter: string; n: number }[] = [];
  const dropped: { reason: string; n: number }[] = [];
  /** Flows that went on without names before their exporter's first poll ended (enrich_interfaces), by reason. */
  const unnamed: { exporter: string; reason: string; n: number }[] = [];
  const telemetry: RunTelemetry = {
    connection: (component, _t, s) => void (component === 'source' && states.push(s)),
    dropped: (_c, _t, reason, n) => void dropped.push({ reason, n }),
    // The flow source's declared metrics (src/plugins/connectors/flow/metrics.ts), as events.
    metric: (name, _op, labels, n) => {
      const exporter = String(labels.exporter);
      if (name === 'svc_flow_enrich_unnamed_total') unnamed.push({ exporter, reason: String(labels.reason), n });
      else if (name in FLOW_EVENTS) events.push({ event: FLOW_EVENTS[name]!, exporter, n });
    },
  };
  const stop = new AbortController();
  const cfg = loadPipeline({
    name: opts.name ?? 'flow-test',
    schedule: { type: 'stream' },
    source: { type: 'flow', host: '127.0.0.1', ...source, port },
    serializer_in: { type: 'json' },
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
    on_error: 'dlq',
    dlq: { type: 'local', path: dlq, filename_template: 'dlq.ndjson' },
  });
  const done = runPipeline(cfg, { signal: stop.signal, telemetry, log: silentLogger, processed: new MemoryProcessedFiles() });
  await until(() => states.includes('connected') || states.includes('disconnected'), 15_000, 'the flow source listening');
  const sender = createSocket('udp4');
  return {
    port,
    events,
    dropped,
    unnamed,
    records: () => outputRecords(out),
    deadLetters: () => outputRecords(dlq),
    send: async (...datagrams: Buffer[]) => {
      for (const d of datagrams) await new Promise<void>((r, j) => sender.send(d, port, '127.0.0.1', (e) => (e ? j(e) : r())));
    },
    async end() {
      sender.close();
      stop.abort();
      return done;
    },
  };
}

/**
 * Runs pmacctd over a pcap with its sFlow probe (sfprobe, 1 in `rate` packets) exporting to 127.0.0.1:port,
 * and keeps it running after the end of the file until stopped. At the end of a file pmacctd's core stops
 * its plugins at once, and the probe drops what it has not yet read from the core's queue: on a loaded
 * machine that was most of the capture (CI saw 28 of 77 samples sent). So the caller awaits what it
 * expects to receive, then stops the exporter.
 */
export async function pmacctdSflow(pcap: string, port: number, dir: string, rate = 1): Promise<{ stop: () => Promise<void> }> {
  const conf = pmacctdConf(pcap, dir, 'sfprobe', [`sfprobe_receiver[p]: 127.0.0.1:${port}`, `sampling_rate: ${rate}`, 'pcap_savefile_wait: true']);
  // The probe is a forked child of pmacctd's core: both stop with the group.
  return startPmacctGroup('pmacctd', ['pmacctd', '-f', conf]);
}

/** pmacctd's configuration file in `dir`: reading `pcap` with one plugin, `p`, of `plugin` and its `lines`. */
function pmacctdConf(pcap: string, dir: string, plugin: 'sfprobe' | 'nfprobe', lines: string[]): string {
  const conf = join(dir, `pmacctd-${plugin}-${Date.now()}.conf`);
  writeFileSync(conf, ['daemonize: false', `pcap_savefile: ${pcap}`, `plugins: ${plugin}[p]`, ...lines, ''].join('\n'));
  return conf;
}

/**
 * A pmacct daemon in its own process group (its plugins are forked children, and its core ignores
 * SIGTERM and SIGINT while a plugin runs, seen with 1.7.7), started once its configuration is read
 * (a failed bind or setting is logged as an ERROR at once); stop() kills the group by its PID.
 */
async function startPmacctGroup(name: string, argv: string[]): Promise<{ stop: () => Promise<void> }> {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await until(() => /Reading configuration file/.test(log) || child.exitCode !== null, 10_000, `${name} started`);
  if (child.exitCode !== null || /ERROR/.test(log)) throw new Error(`${name} failed: ${log}`);
  return {
    async stop() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
    },
  };
}

/**
 * Runs pmacctd over a pcap with its NetFlow/IPFIX probe (nfprobe) exporting `version` (9 or 10) to
 * 127.0.0.1:port; resolves when it exits at the end of the file, its flows expired and sent.
 */
export async function pmacctdNfprobe(pcap: string, port: number, dir: string, version: 9 | 10): Promise<void> {
  const conf = pmacctdConf(pcap, dir, 'nfprobe', [`nfprobe_receiver[p]: 127.0.0.1:${port}`, `nfprobe_version[p]: ${version}`]);
  const child = spawn('pmacctd', ['-f', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(timer);
  // Its core exits 1 when the probe has finished first ("no more plugins active"), a race at the end of the file: the probe has sent everything then.
  const finished = code === 0 || (code === 1 && /nfprobe \): Shutting down on user request/.test(log));
  if (!finished) throw new Error(`pmacctd exited with ${code}: ${log.split('\n').slice(2).join(' | ')}`);
}

export interface Sfacctd {
  port: number;
  /** The flows sfacctd's print plugin has written so far (its CSV), summed per 5-tuple. */
  flows(): NfdumpFlow[];
  stop(): Promise<void>;
}

/** pmacct's sfacctd on a free loopback port, aggregating per 5-tuple into a CSV file it appends to every second. */
export async function startSfacctd(dir: string): Promise<Sfacctd> {
  const port = await freeUdpPort();
  const csv = join(dir, 'sfacctd.csv');
  const conf = join(dir, 'sfacctd.conf');
  writeFileSync(
    conf,
    [
      'daemonize: false',
      'sfacctd_ip: 127.0.0.1',
      `sfacctd_port: ${port}`,
      'plugins: print[p]',
      'aggregate[p]: src_host, dst_host, src_port, dst_port, proto',
      'print_output[p]: csv',
      `print_output_file[p]: ${csv}`,
      'print_refresh_time[p]: 1',
      // Appended, not rewritten: each refresh writes only what came since the last one, so a file
      // rewritten each second held the last second's samples only (CI saw 76 of 77).
      'print_output_file_append[p]: true',
      'print_num_protos[p]: true',
      '',
    ].join('\n'),
  );
  // Its socket is bound right after the configuration is read; pmacctd waits 2 s before it reads
  // its pcap, so nothing is sent before that.
  const daemon = await startPmacctGroup('sfacctd', ['stdbuf', '-oL', '-eL', 'sfacctd', '-f', conf]);
  return {
    port,
    flows() {
      if (!existsSync(csv)) return [];
      const [head, ...lines] = readFileSync(csv, 'utf8').trim().split('\n');
      const cols = head!.split(',');
      // One row per 5-tuple per refresh: summed per 5-tuple.
      const flows = new Map<string, NfdumpFlow>();
      for (const l of lines) {
        const v = Object.fromEntries(l.split(',').map((x, i) => [cols[i], x]));
        const f = { src: v.SRC_IP!, dst: v.DST_IP!, sport: Number(v.SRC_PORT), dport: Number(v.DST_PORT), protocol: Number(v.PROTOCOL) };
        const k = `${f.src} ${f.sport} ${f.dst} ${f.dport} ${f.protocol}`;
        const seen = flows.get(k) ?? { ...f, packets: 0, bytes: 0, start: '', end: '' };
        seen.packets += Number(v.PACKETS);
        seen.bytes += Number(v.BYTES);
        flows.set(k, seen);
      }
      return [...flows.values()];
    },
    stop: daemon.stop,
  };
}

/** One UDP flow sent over loopback for fprobe to capture: `packets` datagrams of `payload` bytes. */
export interface LoFlow {
  src: string;
  sport: number;
  dst: string;
  dport: number;
  packets: number;
  payload: number;
}

/** `n` UDP flows over loopback: distinct source addresses (127.0.1.x) and ports, sizes that differ, to 127.9.9.9. */
export function loopbackFlows(n: number): LoFlow[] {
  return Array.from({ length: n }, (_, i) => ({
    src: `127.0.1.${i + 1}`,
    sport: 31_000 + i,
    dst: '127.9.9.9',
    dport: 41_000 + i,
    packets: 1 + (i % 5),
    payload: 50 + ((i * 53) % 700),
  }));
}

/** Sends the flows' datagrams (each flow from its own bound socket). */
export async function sendLoopbackFlows(flows: LoFlow[]): Promise<void> {
  for (const f of flows) {
    const s = createSocket('udp4');
    await new Promise<void>((r) => s.bind(f.sport, f.src, () => r()));
    for (let k = 0; k < f.packets; k++) await new Promise<void>((r, j) => s.send(Buffer.alloc(f.payload, 0x62), f.dport, f.dst, (e) => (e ? j(e) : r())));
    await new Promise<void>((r) => s.close(() => r()));
  }
}

/**
 * Debian's fprobe 1.1 capturing loopback (it has no pcap-file mode) with a filter on 127.9.9.0/24,
 * exporting NetFlow v5 to 127.0.0.1:port. fprobe 1.1 sends a datagram only when it holds 30
 * expired flows (and at exit drops the ones it holds, short of 30: seen here), so `pump(cond)`
 * sends filler flows (one packet each, 127.0.0.1 to 127.9.9.8, a new source port each) until
 * `cond()` holds: the flows sent before them go out in full datagrams. With its default pending
 * queue (-q 100) the last flows of a burst never came out in our runs; -q 10000 loses none. The first pump, until a
 * filler flow has come back, says that the capture runs. stop() sends
 * SIGTERM, on which fprobe exports its whole cache and exits.
 */
export async function startFprobe(port: number): Promise<{ pump(cond: () => boolean, what: string): Promise<void>; stop(): Promise<void> }> {
  const child = spawn(
    'fprobe',
    ['-i', 'lo', '-f', 'udp and dst net 127.9.9.0/24', '-n', '5', '-s', '1', '-d', '1', '-e', '2', '-q', '10000', '-l', '2', `127.0.0.1:${port}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await until(() => /collector #1/.test(log) || child.exitCode !== null, 10_000, 'fprobe started');
  if (child.exitCode !== null) throw new Error(`fprobe exited: ${log}`);
  let next = 0;
  return {
    async pump(cond, what) {
      await until(
        async () => {
          if (cond()) return true;
          const burst = Array.from({ length: 10 }, () => ({
            src: '127.0.0.1',
            sport: 20_000 + (next++ % 10_000),
            dst: '127.9.9.8',
            dport: 9,
            packets: 1,
            payload: 8,
          }));
          await sendLoopbackFlows(burst);
          return false;
        },
        30_000,
        what,
        100,
      );
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
