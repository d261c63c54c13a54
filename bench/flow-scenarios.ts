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
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeSyslogPort as freeUdpPort } from '../test/connectors/peers/syslog.js';
import { startInterfaceAgent } from '../test/connectors/peers/snmpd-interfaces.js';
import { ipfix, ip4, set, templateRecord, u16, u32, u64, u8, type Field } from '../test/helpers/flow-wire.js';
import { settled, startStreamIngest } from './pipeline.js';
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
      const nf = await ceiling(STEPS, MAX_LOSS, (rate) => nfcapdStep(pool, dir, rate, STEP_SECONDS));
      const bare = await measure(pool, await startBareNode(BUFFER, FLOWS_PER_DATAGRAM));
      return {
        buffer_size: BUFFER,
        rmem_max: rmem.after,
        flows_per_datagram: FLOWS_PER_DATAGRAM,
        ours_max_flows_per_sec_no_loss: ours.ceiling,
        nfcapd_max_flows_per_sec_no_loss: nf.ceiling,
        ratio: ratio(ours.ceiling, nf.ceiling),
        target_ratio: 0.5,
        logstash_published: LOGSTASH_PUBLISHED,
        bare_node_max_flows_per_sec: bare.ceiling,
        ours_ratio_to_bare_node: ratio(ours.ceiling, bare.ceiling),
        ours_steps: fmtSteps(ours.steps),
        nfcapd_steps: fmtSteps(nf.steps),
        bare_node_steps: fmtSteps(bare.steps),
        ours_cpu_seconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
        sender_max_rate: Math.max(...[...ours.steps, ...nf.steps, ...bare.steps].map((s) => s.sender_rate)),
      };
    } finally {
      rmem.undo();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

const ROUNDS = Number(process.env.BENCH_FLOW_ENRICH_ROUNDS ?? 2);

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
      for (let i = 0; i < ROUNDS; i++) {
        // Alternating which goes first too: on, off, off, on, ...
        const order = i % 2 ? (['off', 'on'] as const) : (['on', 'off'] as const);
        for (const leg of order) {
          const r = await startOurs(dir, `flow-enrich-${leg}-${i}`, leg === 'on' ? agent.port : undefined);
          const m = await measure(pool, r);
          (leg === 'on' ? on : off).push(m.ceiling);
          steps.push(`${leg}#${i}: ${fmtSteps(m.steps)}`);
        }
      }
      // The enriched flows carry the names: checked on the last enriched output.
      const last = readFileSync(join(dir, `flow-enrich-on-${ROUNDS - 1}`, 'flows.ndjson'), 'utf8');
      const first = JSON.parse(last.slice(0, last.indexOf('\n'))) as Record<string, unknown>;
      if (first.in_if_name !== 'ge-0/0/1' || first.out_if_alias !== 'customer ACME') throw new Error(`flows not enriched: ${JSON.stringify(first)}`);
      const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
      return {
        rounds: ROUNDS,
        enriched_max_flows_per_sec_no_loss: mean(on),
        plain_max_flows_per_sec_no_loss: mean(off),
        ratio: ratio(mean(on), mean(off)),
        target_ratio: 0.9,
        enriched_rounds: on.join(' '),
        plain_rounds: off.join(' '),
        steps: steps.join(' | '),
      };
    } finally {
      await agent.stop();
      rmem.undo();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
