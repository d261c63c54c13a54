// A plain SNMP poller, no svc code (the control of the fleet-sharded benchmark): GETs the same 3
// scalars of every agent listed on its stdin (one port a line, on 127.0.0.1), at most
// `concurrency` at once, with one connected UDP socket per target (as svc's SnmpSession) or one
// socket for all (`shared`). Runs cycles on request: each line "cycle" on stdin polls every agent
// once and prints one JSON line {answered, cpu_s} (the CPU of the cycle, utime + stime). Split over
// 1, 2 and 3 processes, it shows what CPU per target does on this machine when the same work is
// divided among processes, whatever svc does.
//   node plain-snmp-poller.mjs <socket|shared|pool> <concurrency> <portsFile>
// (pool: connected sockets kept between polls, each connected again to the next agent.)
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [mode = 'socket', concArg = '200', portsFile] = process.argv.slice(2);
const concurrency = Number(concArg);
const ports = readFileSync(portsFile, 'utf8').split('\n').filter(Boolean).map(Number);
const TIMEOUT_MS = 5000;

/** BER of a definite length. */
const len = (n) => (n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff]);
const tlv = (tag, body) => [tag, ...len(body.length), ...body];
const oid = (text) => {
  const a = text.split('.').map(Number);
  const out = [a[0] * 40 + a[1]];
  for (const n of a.slice(2)) {
    const bytes = [n & 0x7f];
    for (let v = n >> 7; v; v >>= 7) bytes.unshift((v & 0x7f) | 0x80);
    out.push(...bytes);
  }
  return tlv(0x06, out);
};
const OIDS = ['1.3.6.1.2.1.1.3.0', '1.3.6.1.2.1.1.5.0', '1.3.6.1.2.1.2.1.0'];
/** A v2c GET of OIDS with a 4-byte request id (patched in place per request). */
function getRequest(id) {
  const vbs = tlv(
    0x30,
    OIDS.flatMap((o) => tlv(0x30, [...oid(o), 0x05, 0x00])),
  );
  const pdu = tlv(0xa0, [0x02, 0x04, (id >>> 24) & 0x7f, (id >>> 16) & 0xff, (id >>> 8) & 0xff, id & 0xff, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, ...vbs]);
  return Buffer.from(tlv(0x30, [0x02, 0x01, 0x01, ...tlv(0x04, [...Buffer.from('public')]), ...pdu]));
}

/** Reads a TLV header at `at`: [tag, start of the value, length]. */
function header(buf, at) {
  const tag = buf[at];
  let n = buf[at + 1];
  let start = at + 2;
  if (n & 0x80) {
    const k = n & 0x7f;
    n = 0;
    for (let i = 0; i < k; i++) n = (n << 8) | buf[start + i];
    start += k;
  }
  return [tag, start, n];
}
/** The request id and the number of varbinds of a v2c response (undefined when it is not one). */
function parseResponse(buf) {
  try {
    let [, at] = header(buf, 0); // message
    let [, s, n] = header(buf, at); // version
    at = s + n;
    [, s, n] = header(buf, at); // community
    at = s + n;
    const [tag, pduStart] = header(buf, at);
    if (tag !== 0xa2) return undefined;
    [, s, n] = header(buf, pduStart);
    let id = 0;
    for (let i = 0; i < n; i++) id = id * 256 + buf[s + i];
    at = s + n;
    for (let k = 0; k < 2; k++) {
      [, s, n] = header(buf, at);
      at = s + n;
    }
    const [, vs, vn] = header(buf, at);
    let count = 0;
    for (let p = vs; p < vs + vn; count++) {
      [, s, n] = header(buf, p);
      p = s + n;
    }
    return { id, count };
  } catch {
    return undefined;
  }
}

let nextId = 1;
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** One poll with a socket of its own, connected to the agent. */
function pollOwnSocket(port) {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    const id = nextId++;
    const timer = setTimeout(() => done(false), TIMEOUT_MS);
    const done = (ok) => {
      clearTimeout(timer);
      s.close();
      resolve(ok);
    };
    s.on('error', () => done(false));
    s.on('message', (buf) => {
      const r = parseResponse(buf);
      if (r && r.id === id && r.count === OIDS.length) done(true);
    });
    s.connect(port, '127.0.0.1', () => s.send(getRequest(id)));
  });
}

/** One socket for every poll: answers are matched by request id. */
const pending = new Map();
let shared;
function pollShared(port) {
  if (!shared) {
    shared = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 });
    shared.on('message', (buf) => {
      const r = parseResponse(buf);
      const p = r && pending.get(r.id);
      if (p && r.count === OIDS.length) p(true);
    });
    shared.bind(0, '127.0.0.1');
  }
  return new Promise((resolve) => {
    const id = nextId++;
    const timer = setTimeout(() => done(false), TIMEOUT_MS);
    const done = (ok) => {
      clearTimeout(timer);
      pending.delete(id);
      resolve(ok);
    };
    pending.set(id, done);
    shared.send(getRequest(id), port, '127.0.0.1');
  });
}

/** Connected sockets kept between polls: each poll takes one and connects it to its agent. */
const idle = [];
function pollPooled(port) {
  return new Promise((resolve) => {
    let s = idle.pop();
    if (!s) {
      s = createSocket('udp4');
      s.on('error', () => s.done?.(false));
      s.on('message', (buf) => s.onAnswer?.(buf));
    } else s.disconnect();
    const id = nextId++;
    const timer = setTimeout(() => done(false), TIMEOUT_MS);
    const done = (ok) => {
      clearTimeout(timer);
      s.done = s.onAnswer = undefined;
      idle.push(s);
      resolve(ok);
    };
    s.done = done;
    s.onAnswer = (buf) => {
      const r = parseResponse(buf);
      if (r && r.id === id && r.count === OIDS.length) done(true);
    };
    s.connect(port, '127.0.0.1', () => s.send(getRequest(id)));
  });
}

async function cycle() {
  const poll = mode === 'shared' ? pollShared : mode === 'pool' ? pollPooled : pollOwnSocket;
  const c0 = cpu();
  let next = 0;
  let answered = 0;
  const lane = async () => {
    while (next < ports.length) if (await poll(ports[next++])) answered++;
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ports.length) }, lane));
  return { answered, cpu_s: cpu() - c0 };
}

const rl = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const line of rl) {
  if (line !== 'cycle') continue;
  process.stdout.write(JSON.stringify(await cycle()) + '\n');
}
shared?.close();
for (const s of idle) s.close();
