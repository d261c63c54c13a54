// The naive baseline the ndjson-basic scenario is compared with: readline, JSON.parse, rename, cast,
// filter, JSON.stringify, one stream write per record. Run by `npm run bench -- ndjson-basic`.
import fs from 'node:fs';
import readline from 'node:readline';
const [input = '.bench-data/ndjson-1000000/interfaces.ndjson', output = '.bench-data/naive.out'] = process.argv.slice(2);
const t = performance.now();
const rl = readline.createInterface({ input: fs.createReadStream(input), crlfDelay: Infinity });
const out = fs.createWriteStream(output);
let n = 0;
for await (const line of rl) {
  n++;
  const r = JSON.parse(line);
  r.in_octets = r.ifInOctets;
  delete r.ifInOctets;
  r.out_octets = r.ifOutOctets;
  delete r.ifOutOctets;
  r.ifIndex = parseInt(r.ifIndex, 10);
  if (r.ifOperStatus !== 1) continue;
  if (!out.write(JSON.stringify(r) + '\n')) await new Promise((res) => out.once('drain', res));
}
out.end();
await new Promise((r) => out.on('finish', r));
const s = (performance.now() - t) / 1000;
console.log(JSON.stringify({ records: n, seconds: Number(s.toFixed(3)), records_per_sec: Math.round(n / s) }));
