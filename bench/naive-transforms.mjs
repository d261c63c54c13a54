// The naive baseline of the transforms-chain scenario: readline, JSON.parse, the eight transforms
// written by hand (rename, cast, add_field, filter, timestamp_normalize, mask, value_map, project),
// JSON.stringify, one stream write per record. Run by `npm run bench -- transforms-chain`.
import fs from 'node:fs';
import readline from 'node:readline';
const [input = '.bench-data/ndjson-1000000/interfaces.ndjson', output = '.bench-data/naive-transforms.out'] = process.argv.slice(2);
const t = performance.now();
const rl = readline.createInterface({ input: fs.createReadStream(input), crlfDelay: Infinity });
const out = fs.createWriteStream(output);
let n = 0;
const states = { 1: 'up', 2: 'down' };
for await (const line of rl) {
  n++;
  const r = JSON.parse(line);
  r.in_octets = r.ifInOctets;
  delete r.ifInOctets;
  r.ifIndex = parseInt(r.ifIndex, 10);
  r.in_bits = r.in_octets * 8;
  if (r.ifOperStatus !== 1) continue;
  r.ts = new Date(r.ts * 1000).toISOString();
  r.host = r.host.slice(0, 4) + '*'.repeat(Math.max(0, r.host.length - 4));
  r.oper_status = states[r.ifOperStatus] ?? r.ifOperStatus;
  const p = { host: r.host, ifIndex: r.ifIndex, in_bits: r.in_bits, ts: r.ts, oper_status: r.oper_status };
  if (!out.write(JSON.stringify(p) + '\n')) await new Promise((res) => out.once('drain', res));
}
out.end();
await new Promise((r) => out.on('finish', r));
const s = (performance.now() - t) / 1000;
console.log(JSON.stringify({ records: n, seconds: Number(s.toFixed(3)), records_per_sec: Math.round(n / s) }));
