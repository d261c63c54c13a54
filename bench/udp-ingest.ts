// What the UDP ingest benchmarks share (syslog-ingest, flow-ingest, flow-enrich): a sender child
// process replaying a pool of pre-built datagrams at a given rate (paced per millisecond, an
// optional 32-bit sequence number rewritten in each), receivers that count what arrived, one step
// of sending and counting, the ceiling (steps up until the loss passes a bound), the kernel's drop
// counter, and net.core.rmem_max raised for the run.
//
// Rates and counts are in records: a datagram carries `perDatagram` of them (1 syslog message, 30
// IPFIX flows), so a receiver's count of written lines compares with what was sent.
import { spawn } from 'node:child_process';
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { settled, settledSize } from './pipeline.js';

// The sender: the pool's datagrams (a file of 2-byte lengths and bytes), sent round robin, paced
// per ms. With a sequence offset, each datagram's 32-bit sequence number is set before it is sent
// (the pool's buffers are used again only a whole pool later, long after the send has completed).
const SENDER = `
const dgram = require('node:dgram');
const fs = require('node:fs');
const [port, rate, seconds, seqOffset, seqStep] = process.argv.slice(1, 6).map(Number);
const file = process.argv[6];
const raw = fs.readFileSync(file);
const pool = [];
for (let i = 0; i < raw.length; ) { const n = raw.readUInt16BE(i); pool.push(raw.subarray(i + 2, i + 2 + n)); i += 2 + n; }
const total = Math.round(rate * seconds);
const s = dgram.createSocket({ type: 'udp4', sendBufferSize: 4 * 1024 * 1024 });
s.connect(port, '127.0.0.1', () => {
  let sent = 0;
  let seq = 0;
  const t0 = performance.now();
  const tick = () => {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate));
    while (sent < due) {
      const d = pool[sent++ % pool.length];
      if (seqOffset >= 0) { d.writeUInt32BE(seq >>> 0, seqOffset); seq += seqStep; }
      s.send(d);
    }
    if (sent < total) return setImmediate(tick);
    const secs = (performance.now() - t0) / 1000;
    s.close(() => process.stdout.write(JSON.stringify({ sent, seconds: secs })));
  };
  tick();
});
`;

/** A pool of datagrams the sender replays, written to `file`; `seq` rewrites a 32-bit sequence number at `offset`, adding `step` per datagram. */
export interface DatagramPool {
  file: string;
  /** Records in each datagram. */
  perDatagram: number;
  seq?: { offset: number; step: number };
}

export function writePool(file: string, datagrams: Buffer[], perDatagram: number, seq?: DatagramPool['seq']): DatagramPool {
  const parts: Buffer[] = [];
  for (const d of datagrams) {
    const n = Buffer.alloc(2);
    n.writeUInt16BE(d.length);
    parts.push(n, d);
  }
  writeFileSync(file, Buffer.concat(parts));
  return { file, perDatagram, ...(seq ? { seq } : {}) };
}

/** Sends the pool at `rate` records/s for `seconds`: records sent, and the seconds it took. */
export function send(pool: DatagramPool, port: number, rate: number, seconds: number): Promise<{ sent: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const args = [String(port), String(rate / pool.perDatagram), String(seconds), String(pool.seq?.offset ?? -1), String(pool.seq?.step ?? 0), pool.file];
    const p = spawn(process.execPath, ['-e', SENDER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`sender exited ${code}`));
      const r = JSON.parse(out) as { sent: number; seconds: number };
      resolve({ sent: r.sent * pool.perDatagram, seconds: r.seconds });
    });
  });
}

/** Newlines in bytes [from, to) of `file`, streamed. */
async function linesBetween(file: string, from: number, to: number): Promise<number> {
  if (to <= from) return 0;
  let n = 0;
  for await (const chunk of createReadStream(file, { start: from, end: to - 1, highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) n++;
  }
  return n;
}

/** The kernel's count of UDP datagrams dropped for a full receive buffer (all sockets: Udp RcvbufErrors). */
export function rcvbufErrors(): number {
  const lines = readFileSync('/proc/net/snmp', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('Udp:'));
  const names = lines[0]!.split(/\s+/);
  const values = lines[1]!.split(/\s+/);
  return Number(values[names.indexOf('RcvbufErrors')]);
}

export interface Receiver {
  port: number;
  /** Records received so far, once the receiver has drained its buffers. */
  received(): Promise<number>;
  stop(): Promise<void>;
}

/** Received = lines written to `file` (NDJSON lines, omfile lines), counted as the file grows. */
export function lineCounter(file: string): () => Promise<number> {
  let offset = 0;
  let lines = 0;
  return async () => {
    const size = await settledSize(file);
    lines += await linesBetween(file, offset, size);
    offset = size;
    return lines;
  };
}

// The bare receiver: counts datagrams, answers its count on each line read from stdin.
const COUNTER = `
const dgram = require('node:dgram');
const [buffer] = process.argv.slice(1).map(Number);
let n = 0;
const s = dgram.createSocket({ type: 'udp4', recvBufferSize: buffer });
s.on('message', () => n++);
s.bind(0, '127.0.0.1', () => process.stdout.write(s.address().port + '\\n'));
process.stdin.on('data', () => process.stdout.write(n + '\\n'));
process.stdin.on('end', () => process.exit(0));
`;

/** A Node process that only counts the datagrams it receives (no parse, no write): the floor of any Node receiver. Counts datagrams × perDatagram. */
export async function startBareNode(buffer: number, perDatagram = 1): Promise<Receiver> {
  const p = spawn(process.execPath, ['-e', COUNTER, String(buffer)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const answers: ((line: string) => void)[] = [];
  let pending = '';
  p.stdout.setEncoding('utf8').on('data', (d: string) => {
    pending += d;
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      answers.shift()?.(pending.slice(0, i));
      pending = pending.slice(i + 1);
    }
  });
  const next = () => new Promise<string>((r) => answers.push(r));
  const port = Number(await next());
  const ask = () => (p.stdin.write('?\n'), next().then((n) => Number(n) * perDatagram));
  const exited = new Promise((r) => p.once('exit', r));
  return {
    port,
    received: () => settled(ask),
    async stop() {
      p.stdin.end();
      await exited;
    },
  };
}

export interface Step {
  rate: number;
  sent: number;
  received: number;
  loss: number;
  /** Datagrams the kernel dropped (receive buffer full); the rest of the lost were dropped by the receiver itself. */
  kernel_drops: number;
  sender_rate: number;
}

/** Sends the pool at `rate` for `seconds` into `r` and counts what arrived. */
export async function step(pool: DatagramPool, r: Receiver, rate: number, seconds: number): Promise<Step> {
  const before = await r.received();
  const k0 = rcvbufErrors();
  const { sent, seconds: s } = await send(pool, r.port, rate, seconds);
  const received = (await r.received()) - before;
  return { rate, sent, received, loss: Math.max(0, (sent - received) / sent), kernel_drops: rcvbufErrors() - k0, sender_rate: Math.round(sent / s) };
}

/** Steps the rate up until the loss passes `maxLoss`; the ceiling is the highest rate the sender achieved in a step within it. */
export async function ceiling(rates: number[], maxLoss: number, stepOf: (rate: number) => Promise<Step>): Promise<{ ceiling: number; steps: Step[] }> {
  const steps: Step[] = [];
  let best = 0;
  for (const rate of rates) {
    const st = await stepOf(rate);
    steps.push(st);
    if (st.loss > maxLoss) break;
    best = Math.max(best, st.sender_rate);
  }
  return { ceiling: best, steps };
}

const RMEM = '/proc/sys/net/core/rmem_max';

/** Raises net.core.rmem_max to `buffer` when it is lower and writable; returns how to undo it. */
export function raiseRmem(buffer: number): { before: number; after: number; undo(): void } {
  const before = Number(readFileSync(RMEM, 'utf8').trim());
  if (before >= buffer) return { before, after: before, undo() {} };
  try {
    writeFileSync(RMEM, String(buffer));
  } catch {
    return { before, after: before, undo() {} };
  }
  return { before, after: buffer, undo: () => writeFileSync(RMEM, String(before)) };
}

export const fmtSteps = (steps: Step[]) =>
  steps.map((s) => `${s.rate}:${s.received}/${s.sent}${s.kernel_drops ? ` (kernel dropped ${s.kernel_drops})` : ''}`).join(' ');

export const ratio = (a: number, b: number) => Number((a / Math.max(1, b)).toFixed(2));
