// The sender of otlp-ingest (bench/otlp-scenarios.ts), a process of its own so that the receiver
// measured (the otlp source, or the bare node:http reference) has its process to itself: it reads
// the request bodies (a file of 4-byte big-endian lengths, each followed by its body), POSTs them to
// http://127.0.0.1:<port>/v1/metrics from 8 concurrent senders, sends a body answered 503 again
// after 5 ms (as an exporter retries), and prints one JSON line: the epoch milliseconds of its first
// request and of its last answer. Usage: node bench/otlp-sender.mjs PORT BODIES_FILE
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

const [port, file] = process.argv.slice(2);
const all = readFileSync(file);
const bodies = [];
for (let at = 0; at < all.length; ) {
  const n = all.readUInt32BE(at);
  bodies.push(all.subarray(at + 4, at + 4 + n));
  at += 4 + n;
}
const agent = new Agent({ keepAlive: true, maxSockets: 8 });
const now = () => performance.timeOrigin + performance.now();

function post(body) {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: Number(port), method: 'POST', path: '/v1/metrics', agent, headers: { 'content-type': 'application/x-protobuf' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let next = 0;
let retried = 0;
async function sender() {
  while (next < bodies.length) {
    const b = bodies[next++];
    for (;;) {
      const status = await post(b);
      if (status === 200) break;
      if (status !== 503) throw new Error(`otlp POST answered ${status}`);
      retried++;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

const started_ms = now();
await Promise.all(Array.from({ length: 8 }, sender));
const ended_ms = now();
agent.destroy();
process.stdout.write(`${JSON.stringify({ bodies: bodies.length, retried, started_ms, ended_ms })}\n`);
