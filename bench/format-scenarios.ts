// Format scenarios: a large file in one format decoded through the real engine (local source ->
// serializer_in -> NDJSON -> local sink), like runInterfaces in scenarios.ts.
//   csv-parse: 1,000,000 rows of interface counters (~75 MB CSV with a header line).
//   xml-parse: the same 1,000,000 records as <record> elements (~215 MB XML).
//   msgpack-parse: the same 1,000,000 records as concatenated MessagePack maps (~95 MB).
import { createWriteStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { Packr } from 'msgpackr';
import { DATA_DIR } from './data.js';
import { rate, runBench } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const ROWS = 1_000_000;

/** The interface record of bench/data.ts as a CSV row; every 50th description is quoted (a comma). */
function csvRow(i: number): string {
  const ifIndex = (i % 48) + 1;
  const descr = i % 50 === 0 ? `"Gi0/${ifIndex}, uplink"` : `Gi0/${ifIndex}`;
  return `rtr-${String(i % 500).padStart(3, '0')},${ifIndex},${descr},${(i * 7919) % 4294967296},${(i * 104729) % 4294967296},${i % 10 === 0 ? 2 : 1},${1763715600 + Math.floor(i / 1000)}`;
}

/** The same record as an object (strings as a CSV or XML reader yields them, numbers as numbers). */
function interfaceObject(i: number) {
  const ifIndex = (i % 48) + 1;
  return {
    host: `rtr-${String(i % 500).padStart(3, '0')}`,
    ifIndex: String(ifIndex),
    ifDescr: i % 50 === 0 ? `Gi0/${ifIndex}, uplink` : `Gi0/${ifIndex}`,
    ifInOctets: (i * 7919) % 4294967296,
    ifOutOctets: (i * 104729) % 4294967296,
    ifOperStatus: i % 10 === 0 ? 2 : 1,
    ts: 1763715600 + Math.floor(i / 1000),
  };
}

function xmlRecord(i: number): string {
  const r = interfaceObject(i);
  return `  <record><host>${r.host}</host><ifIndex>${r.ifIndex}</ifIndex><ifDescr>${r.ifDescr}</ifDescr><ifInOctets>${r.ifInOctets}</ifInOctets><ifOutOctets>${r.ifOutOctets}</ifOutOctets><ifOperStatus>${r.ifOperStatus}</ifOperStatus><ts>${r.ts}</ts></record>`;
}

/** Writes `rows` items (cached under .bench-data/<name>-<rows>/) between a head and a tail. */
async function generated(
  name: string,
  file: string,
  rows: number,
  head: string | Buffer,
  item: (i: number) => string | Buffer,
  tail: string | Buffer,
  sep = '\n',
): Promise<string> {
  const dir = join(DATA_DIR, `${name}-${rows}`);
  const path = join(dir, file);
  if (existsSync(path) && statSync(path).size > 0) return path;
  mkdirSync(dir, { recursive: true });
  const out = createWriteStream(path);
  out.write(head);
  let buf: (string | Buffer)[] = [];
  const flush = async () => {
    const chunk = typeof buf[0] === 'string' ? buf.join(sep) + sep : Buffer.concat(buf as Buffer[]);
    if (!out.write(chunk)) await once(out, 'drain');
    buf = [];
  };
  for (let i = 0; i < rows; i++) {
    buf.push(item(i));
    if (buf.length === 10_000) await flush();
  }
  if (buf.length) await flush();
  out.end(tail);
  await once(out, 'finish');
  return path;
}

const csvFile = (rows: number) => generated('csv', 'interfaces.csv', rows, 'host,ifIndex,ifDescr,ifInOctets,ifOutOctets,ifOperStatus,ts\n', csvRow, '');
const xmlFile = (rows: number) => generated('xml', 'interfaces.xml', rows, '<?xml version="1.0" encoding="UTF-8"?>\n<records>\n', xmlRecord, '</records>\n');
const packr = new Packr({ useRecords: false, variableMapSize: true });
const msgpackFile = (rows: number) => generated('msgpack', 'interfaces.msgpack', rows, Buffer.alloc(0), (i) => packr.pack(interfaceObject(i)), Buffer.alloc(0));

/** Decodes the files matching `pattern` in `dir` with `serializerIn` into NDJSON. */
async function decodeToNdjson(name: string, threads: number, dir: string, pattern: string, serializerIn: string, expected: number): Promise<Measured> {
  return rate(await runBench({ name, threads, dir, pattern, serializerIn, expected }));
}

export const csvParse: Scenario = {
  threads: [1, 2],
  prepare: async () => void (await csvFile(ROWS)),
  run: async (threads) => decodeToNdjson('csv-parse', threads, dirname(await csvFile(ROWS)), '*.csv', '{ type: csv }', ROWS),
};

export const xmlParse: Scenario = {
  threads: [1, 2],
  prepare: async () => void (await xmlFile(ROWS)),
  run: async (threads) => decodeToNdjson('xml-parse', threads, dirname(await xmlFile(ROWS)), '*.xml', '{ type: xml }', ROWS),
};

export const msgpackParse: Scenario = {
  threads: [1, 2],
  prepare: async () => void (await msgpackFile(ROWS)),
  run: async (threads) => decodeToNdjson('msgpack-parse', threads, dirname(await msgpackFile(ROWS)), '*.msgpack', '{ type: msgpack }', ROWS),
};
