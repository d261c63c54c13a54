// The naive baseline the ndjson-basic target is compared with: readline, JSON.parse, rename, cast,
// filter, JSON.stringify, one stream write per record. Run: node bench/naive-ndjson.mjs (after npm run bench has generated the input).

import fs from 'node:fs'; import readline from 'node:readline';
const t = performance.now();
const rl = readline.createInterface({ input: fs.createReadStream('.bench-data/ndjson-1000000/interfaces.ndjson'), crlfDelay: Infinity });
const out = fs.createWriteStream('.bench-data/naive.out'); let n = 0;
for await (const line of rl) { n++; const r = JSON.parse(line); r.in_octets = r.ifInOctets; delete r.ifInOctets; r.out_octets = r.ifOutOctets; delete r.ifOutOctets; r.ifIndex = parseInt(r.ifIndex, 10); if (r.ifOperStatus !== 1) continue; if (!out.write(JSON.stringify(r) + '\n')) await new Promise(res => out.once('drain', res)); }
out.end(); await new Promise(r => out.on('finish', r));
const s = (performance.now() - t) / 1000; console.log('naive', n, s.toFixed(2), Math.round(n / s));
