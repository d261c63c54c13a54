// flow-ingest: IPFIX datagrams (30 flows of 13 fields each, flowStart/EndMilliseconds, a template
// every 50 datagrams, sequence numbers rewritten as an exporter counts them) replayed at
// increasing rates into the flow source -> NDJSON (local sink), and into nfdump's nfcapd on the
// same datagrams, in the same run. The figure of each is the highest rate (flows/s) at which
// nothing was lost: for svc the NDJSON lines written, for nfcapd the flows of the file it wrote
// (`nfdump -I`), against the flows sent. nfcapd is started afresh for each step (it writes its
// file when it stops). A Node process that only counts datagrams is measured too: the floor of any
// receiver built on Node's dgram. Logstash's published figure (3-4k flows/s,
// logstash-plugins/logstash-codec-netflow#151) is reported beside them: it is not measured here.
//
// flow-enrich: the same flow source with enrich_interfaces on (Debian's snmpd serving the
// exporter's interfaces, so every flow gets six more fields) against off, alternating on and off
// rounds so that the machine's drift (other work on its two cores) falls on both alike.
//
// The sender shares the machine's two cores with the receiver; its achieved rate is reported.
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeSyslogPort as freeUdpPort } from '../test/connectors/peers/syslog.js';
import { startInterfaceAgent } from '../test/connectors/peers/snmpd-interfaces.js';
import { ipfix, ip4, set, templateRecord, u16, u32, u64, u8, type Field } from '../test/helpers/flow-wire.js';
import { settled, startStreamIngest } from './pipeline.js';
import { decodeFlowDatagram } from '../src/plugins/connectors/flow/decode.js';
import { DEFAULT_LIMITS, FlowState } from '../src/plugins/connectors/flow/state.js';
import ndjson from '../src/plugins/serializers/ndjson/index.js';
import type { Measured, Scenario } from './scenarios.js';
import {
  ceiling,
  fmtSteps,
  lineCounter,
  raiseRmem,
  ratio,
  rcvbufErrors,
  send,
  startBareNode,
  step,
  writePool,
  type DatagramPool,
  type Receiver,
  type Step,
} from './udp-ingest.js';

const BUFFER = Number(process.env.BENCH_FLOW_BUFFER ?? 32 * 1024 * 1024);
const FLOWS_PER_DATAGRAM = 30;
const STEP_SECONDS = Number(process.env.BENCH_FLOW_STEP_SECONDS ?? 3);
const WARMUP_RATE = 5_000;
const WARMUP_SECONDS = 2;
const STEPS = [
  5_000, 10_000, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000, 75_000, 100_000, 150_000, 200_000, 300_000, 400_000, 600_000, 800_000, 1_000_000, 1_300_000,
];
/**
 * The CPU cost per flow of the record path's parts, measured in this process on the pool's own
 * datagrams (a bare script, no pipeline, no UDP): the flow decoder alone; the decoder and the
 * product's NDJSON encoder (ndjson's body(): JSON.stringify per record, one string, its UTF-8
 * bytes), i.e. what any NDJSON output of these flows costs in V8 before the runtime adds anything.
 * Each is the best of 5 passes over 30,000 flows (a shared machine's noise only adds time).
 */
function recordPathCost(pool: DatagramPool): Record<string, number> {
  const raw = readFileSync(pool.file);
  const datagrams: Buffer[] = [];
  for (let i = 0; i < raw.length; ) {
    const n = raw.readUInt16BE(i);
    datagrams.push(Buffer.from(raw.subarray(i + 2, i + 2 + n)));
    i += 2 + n;
  }
  const encoder = ndjson.encoder!({ ensure_ascii: true, strict: false, newline: '\n' });
  const state = new FlowState(DEFAULT_LIMITS, {});
  let seq = 0;
  const decodeAll = () => {
    const out: Record<string, unknown>[][] = [];
    for (const d of datagrams) {
      d.writeUInt32BE(seq >>> 0, 8);
      seq += FLOWS_PER_DATAGRAM;
      out.push(decodeFlowDatagram(d, '127.0.0.1', state, 'ipfix'));
    }
    return out;
  };
  const best = (pass: () => number) => {
    let us = Infinity;
    for (let i = 0; i < 5; i++) {
      const c0 = process.cpuUsage();
      const flows = pass();
      const c = process.cpuUsage(c0);
      us = Math.min(us, (c.user + c.system) / flows);
    }
    return Number(us.toFixed(2));
  };
  const decodeUs = best(() => decodeAll().reduce((n, r) => n + r.length, 0));
  const ndjsonUs = best(() => {
    let flows = 0;
    let batch: Record<string, unknown>[] = [];
    for (const recs of decodeAll()) {
      batch.push(...recs);
      if (batch.length >= 1000) {
        flows += batch.length;
        encoder.body(batch);
        batch = [];
      }
    }
    if (batch.length) encoder.body(batch);
    return flows + batch.length;
  });
  return { decode_us_per_flow: decodeUs, decode_ndjson_us_per_flow: ndjsonUs, decode_ndjson_one_core_flows_per_sec: Math.round(1e6 / ndjsonUs) };
}

/** The highest rate with no loss: not one flow missing. */
const MAX_LOSS = 0;
const LOGSTASH_PUBLISHED = '3,000-4,000 flows/s (logstash-codec-netflow issue 151)';

const TEMPLATE_ID = 256;
const FIELDS: Field[] = [
  [8, 4], // sourceIPv4Address
  [12, 4], // destinationIPv4Address
  [7, 2], // sourceTransportPort
  [11, 2], // destinationTransportPort
  [4, 1], // protocolIdentifier
  [6, 1], // tcpControlBits
  [5, 1], // ipClassOfService
  [1, 4], // octetDeltaCount
  [2, 4], // packetDeltaCount
  [10, 4], // ingressInterface
  [14, 4], // egressInterface
  [152, 8], // flowStartMilliseconds
  [153, 8], // flowEndMilliseconds
];
export const IN_IF = 101;
export const OUT_IF = 102;

/** 1000 IPFIX messages of 30 flows each, a template in every 50th; the sequence number (offset 8) is set by the sender. */
export function flowPool(dir: string): DatagramPool {
  const exportTime = Math.floor(Date.now() / 1000);
  const datagrams: Buffer[] = [];
  for (let d = 0; d < 1000; d++) {
    const recs: Buffer[] = [];
    for (let i = 0; i < FLOWS_PER_DATAGRAM; i++) {
      const n = d * FLOWS_PER_DATAGRAM + i;
      const end = exportTime * 1000 - (n % 1000);
      recs.push(
        Buffer.concat([
          ip4(`10.${(n >> 16) & 0xff}.${(n >> 8) & 0xff}.${n & 0xff}`),
          ip4(`192.0.2.${(n % 250) + 1}`),
          u16(1024 + (n % 60_000)),
          u16(n % 2 ? 53 : 443),
          u8(n % 2 ? 17 : 6),
          u8(n % 2 ? 0 : 0x18),
          u8(0),
          u32(40 + (n % 1400) * 10),
          u32(1 + (n % 10)),
          u32(IN_IF),
          u32(OUT_IF),
          u64(end - 1000 - (n % 5000)),
          u64(end),
        ]),
      );
    }
    const sets = [set(TEMPLATE_ID, ...recs)];
    if (d % 50 === 0) sets.unshift(set(2, templateRecord(TEMPLATE_ID, FIELDS)));
    datagrams.push(ipfix({ seq: 0, domain: 1, exportTime }, ...sets));
  }
  return writePool(join(dir, 'ipfix.pool'), datagrams, FLOWS_PER_DATAGRAM, { offset: 8, step: FLOWS_PER_DATAGRAM });
}

/** The flow source into NDJSON, with enrich_interfaces against `agentPort` when given. */
async function startOurs(dir: string, name: string, agentPort?: number): Promise<Receiver> {
  const port = await freeUdpPort();
  const out = join(dir, name);
  const enrich = agentPort ? `, enrich_interfaces: { port: ${agentPort}, refresh_seconds: 3600 }` : '';
  const run = startStreamIngest(`version: "1"
pipeline:
  name: bench-${name}
  schedule: { type: stream }
  source: { type: flow, protocol: ipfix, host: 127.0.0.1, port: ${port}, buffer_size: ${BUFFER}${enrich} }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: flows.ndjson }]
`);
  await run.ready;
  return {
    port,
    received: lineCounter(join(out, 'flows.ndjson')),
    async stop() {
      const rec = await run.stop();
      if (rec.status !== 'success') throw new Error(`flow ingest run failed: ${JSON.stringify(rec)}`);
    },
  };
}

/** Bytes waiting in the receive queue of the UDP socket on `port` (/proc/net/udp). */
function rxQueue(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols[1]?.endsWith(`:${hex}`)) return parseInt(cols[4]!.split(':')[1]!, 16);
  }
  return 0;
}

/** One step into a fresh nfcapd: sends, waits for its socket to drain, stops it (it writes its file) and counts the file's flows. */
async function nfcapdStep(pool: DatagramPool, base: string, rate: number, seconds: number): Promise<Step> {
  const dir = join(base, `nfcapd-${rate}-${Date.now()}`);
  mkdirSync(dir);
  const port = await freeUdpPort();
  const child = spawn('stdbuf', ['-oL', '-eL', 'nfcapd', '-b', '127.0.0.1', '-p', String(port), '-w', dir, '-B', String(BUFFER)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  for (let i = 0; i < 200 && !/Startup nfcapd/.test(log) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 25));
  if (!/Startup nfcapd/.test(log)) throw new Error(`nfcapd did not start: ${log}`);
  const k0 = rcvbufErrors();
  const { sent, seconds: s } = await send(pool, port, rate, seconds);
  await settled(() => rxQueue(port), 300);
  process.kill(child.pid!, 'SIGTERM');
  await exited;
  const r = spawnSync('nfdump', ['-R', dir, '-I'], { encoding: 'utf8' });
  const received = Number(/^Flows: (\d+)/m.exec(r.stdout)?.[1] ?? 0);
  if (!readdirSync(dir).some((f) => f.startsWith('nfcapd.'))) throw new Error(`nfcapd wrote no file: ${log}`);
  const k1 = rcvbufErrors();
  rmSync(dir, { recursive: true, force: true });
  return { rate, sent, received, loss: Math.max(0, (sent - received) / sent), kernel_drops: k1 - k0, sender_rate: Math.round(sent / s) };
}

async function measure(pool: DatagramPool, r: Receiver, rates = STEPS): Promise<{ ceiling: number; steps: Step[] }> {
  try {
    await step(pool, r, WARMUP_RATE, WARMUP_SECONDS);
    return await ceiling(rates, MAX_LOSS, (rate) => step(pool, r, rate, STEP_SECONDS));
  } finally {
    await r.stop();
  }
}

export const flowIngest: Scenario = {
  async run(): Promise<Measured> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-flow-'));
    const rmem = raiseRmem(BUFFER);
    try {
      const pool = flowPool(dir);
      const cpu0 = process.cpuUsage();
      const ours = await measure(pool, await startOurs(dir, 'flow-ingest'));
      const cpu = process.cpuUsage(cpu0);
      const oursFlows = ours.steps.reduce((n, s) => n + s.received, 0) + WARMUP_RATE * WARMUP_SECONDS;
      const nf = await ceiling(STEPS, MAX_LOSS, (rate) => nfcapdStep(pool, dir, rate, STEP_SECONDS));
      const bare = await measure(pool, await startBareNode(BUFFER, FLOWS_PER_DATAGRAM));
      const senderMax = Math.max(...[...ours.steps, ...nf.steps, ...bare.steps].map((s) => s.sender_rate));
      // nfcapd lost nothing even at the last rate tried: its figure is the sender's, not its own, and the ratio an upper bound.
      const nfcapdBySender = nf.steps.length === STEPS.length && nf.steps.at(-1)!.loss === 0;
      const bareBySender = bare.steps.length === STEPS.length && bare.steps.at(-1)!.loss === 0;
      return {
        buffer_size: BUFFER,
        rmem_max: rmem.after,
        flows_per_datagram: FLOWS_PER_DATAGRAM,
        ours_max_flows_per_sec_no_loss: ours.ceiling,
        nfcapd_max_flows_per_sec_no_loss: nf.ceiling,
        ratio: ratio(ours.ceiling, nf.ceiling),
        ...(nfcapdBySender ? { ratio_is_upper_bound: 'yes' } : {}),
        target_ratio: 0.5,
        nfcapd_limited_by_sender: nfcapdBySender ? 'yes' : 'no',
        bare_node_limited_by_sender: bareBySender ? 'yes' : 'no',
        sender_max_rate: senderMax,
        logstash_published: LOGSTASH_PUBLISHED,
        bare_node_max_flows_per_sec: bare.ceiling,
        ours_ratio_to_bare_node: ratio(ours.ceiling, bare.ceiling),
        ours_steps: fmtSteps(ours.steps),
        nfcapd_steps: fmtSteps(nf.steps),
        bare_node_steps: fmtSteps(bare.steps),
        ours_cpu_seconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
        // CPU of this process (the pipeline, and the harness counting its lines) per flow written, over the whole measure.
        ours_cpu_us_per_flow: Number(((cpu.user + cpu.system) / oursFlows).toFixed(2)),
        ...recordPathCost(pool),
        load_average: loadavg()
          .map((x) => Number(x.toFixed(1)))
          .join(' '),
      };
    } finally {
      rmem.undo();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

const ROUNDS = Number(process.env.BENCH_FLOW_ENRICH_ROUNDS ?? 2);

/** The process's resident memory sampled every 200 ms until stop(), which returns its peak in MB. */
function rssSampler(): { stop(): number } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 200);
  return {
    stop() {
      clearInterval(timer);
      return Math.round(Math.max(peak, process.memoryUsage.rss()) / 1e6);
    },
  };
}

/**
 * "named/lines" of an enriched output: the lines whose flow carries both interfaces' names. Read as
 * a stream: an enriched leg writes millions of lines (over 1 GB), and reading it whole into one
 * string, as this check first did, took the process to 2.1 GB and past V8's longest string (no line
 * printed at all).
 */
async function namedShare(file: string): Promise<string> {
  let lines = 0;
  let named = 0;
  let carry = '';
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 }) as AsyncIterable<string>) {
    const text = carry + chunk;
    let at = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; at = nl + 1, nl = text.indexOf('\n', at)) {
      lines++;
      const line = text.slice(at, nl);
      if (line.includes('"in_if_name":"ge-0/0/1"') && line.includes('"out_if_alias":"customer ACME"')) named++;
    }
    carry = text.slice(at);
  }
  return `${named}/${lines}`;
}

export const flowEnrich: Scenario = {
  async run(): Promise<Measured> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-flow-enrich-'));
    const rmem = raiseRmem(BUFFER);
    const agent = await startInterfaceAgent([
      { index: IN_IF, name: 'ge-0/0/1', alias: 'uplink to core-1', speed: 10_000 },
      { index: OUT_IF, name: 'ge-0/0/2', alias: 'customer ACME', speed: 1000 },
    ]);
    try {
      const pool = flowPool(dir);
      const on: number[] = [];
      const off: number[] = [];
      const steps: string[] = [];
      const peakRss = { on: 0, off: 0 };
      const cpuUs = { on: [] as number[], off: [] as number[] };
      const named: string[] = [];
      const errors: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        // Alternating which goes first too: on, off, off, on, ...
        const order = i % 2 ? (['off', 'on'] as const) : (['on', 'off'] as const);
        for (const leg of order) {
          // A leg that fails is reported in the line, not thrown: the scenario always prints its figures.
          const rss = rssSampler();
          try {
            const name = `flow-enrich-${leg}-${i}`;
            const r = await startOurs(dir, name, leg === 'on' ? agent.port : undefined);
            const cpu0 = process.cpuUsage();
            const m = await measure(pool, r);
            const cpu = process.cpuUsage(cpu0);
            cpuUs[leg].push((cpu.user + cpu.system) / (m.steps.reduce((n, s) => n + s.received, 0) + WARMUP_RATE * WARMUP_SECONDS));
            (leg === 'on' ? on : off).push(m.ceiling);
            steps.push(`${leg}#${i}: ${fmtSteps(m.steps)}`);
            if (leg === 'on') named.push(await namedShare(join(dir, name, 'flows.ndjson')));
            // A leg's output is a gigabyte or more at the top rates: not kept for the next ones.
            rmSync(join(dir, name), { recursive: true, force: true });
          } catch (e) {
            errors.push(`${leg}#${i}: ${(e as Error).message}`);
          } finally {
            peakRss[leg] = Math.max(peakRss[leg], rss.stop());
          }
        }
      }
      const mean2 = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
      const mean = (xs: number[]) => Math.round(mean2(xs));
      return {
        rounds: ROUNDS,
        enriched_max_flows_per_sec_no_loss: mean(on),
        plain_max_flows_per_sec_no_loss: mean(off),
        ratio: ratio(mean(on), mean(off)),
        target_ratio: 0.9,
        enriched_rounds: on.join(' '),
        plain_rounds: off.join(' '),
        // The ceilings move a whole step (25-50 %) with the machine's load; the CPU per flow written
        // (this process: the pipeline and the harness) is the steadier comparison.
        enriched_cpu_us_per_flow: Number(mean2(cpuUs.on).toFixed(2)),
        plain_cpu_us_per_flow: Number(mean2(cpuUs.off).toFixed(2)),
        // Throughput-like: plain CPU per flow over enriched (1.0: enrichment costs nothing).
        cpu_ratio: Number((mean2(cpuUs.off) / mean2(cpuUs.on)).toFixed(2)),
        // Flows of each enriched leg that carry both interfaces' names (the rest went on before the
        // exporter's first poll ended: wait_seconds, or the wait's ceiling).
        enriched_named: named.join(' '),
        enriched_peak_rss_mb: peakRss.on,
        plain_peak_rss_mb: peakRss.off,
        load_average: loadavg()
          .map((x) => Number(x.toFixed(1)))
          .join(' '),
        ...(errors.length ? { errors: errors.join(' | ') } : {}),
        steps: steps.join(' | '),
      };
    } finally {
      await agent.stop();
      rmem.undo();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
