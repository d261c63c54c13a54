// avro-roundtrip: the 1M-record interface NDJSON file -> Avro container file (deflate) -> NDJSON,
// two real pipeline runs; prints records/s of each leg and of the whole round trip.
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DATA_DIR, ndjsonFile } from './data.js';
import { runBench } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const RECORDS = 1_000_000;

// The fields of bench/data.ts interfaceRecord (ifIndex is a string there).
const SCHEMA = {
  type: 'record',
  name: 'Interface',
  fields: [
    { name: 'host', type: 'string' },
    { name: 'ifIndex', type: 'string' },
    { name: 'ifDescr', type: 'string' },
    { name: 'ifInOctets', type: 'long' },
    { name: 'ifOutOctets', type: 'long' },
    { name: 'ifOperStatus', type: 'int' },
    { name: 'ts', type: 'long' },
  ],
};

async function leg(
  name: string,
  threads: number,
  dir: string,
  pattern: string,
  serializerIn: string,
  serializerOut: string,
  out: string,
): Promise<{ seconds: number; bytes: number }> {
  const r = await runBench({ name, threads, dir, pattern, serializerIn, serializerOut, out, filename: '{pipeline}.out', expected: RECORDS });
  return { seconds: r.seconds, bytes: readdirSync(out).reduce((n, f) => n + statSync(join(out, f)).size, 0) };
}

export const avroRoundtrip: Scenario = {
  threads: [1, 2],
  prepare: async () => void (await ndjsonFile(RECORDS)),
  async run(threads: number): Promise<Measured> {
    const input = await ndjsonFile(RECORDS);
    const base = join(DATA_DIR, 'out', `avro-roundtrip-${threads}`);
    const schemaFile = join(base, 'interface.avsc');
    mkdirSync(base, { recursive: true });
    writeFileSync(schemaFile, JSON.stringify(SCHEMA));
    const avro = `{ type: avro, schema_file: ${JSON.stringify(schemaFile)}, codec: deflate }`;
    const enc = await leg('avro-encode', threads, dirname(input), '*.ndjson', '{ type: ndjson }', avro, join(base, 'avro'));
    const dec = await leg('avro-decode', threads, join(base, 'avro'), '*.out', avro, '{ type: ndjson }', join(base, 'ndjson'));
    const total = enc.seconds + dec.seconds;
    return {
      records: RECORDS,
      seconds: Number(total.toFixed(3)),
      records_per_sec: Math.round(RECORDS / total),
      encode_records_per_sec: Math.round(RECORDS / enc.seconds),
      decode_records_per_sec: Math.round(RECORDS / dec.seconds),
      avro_mb: Number((enc.bytes / 1e6).toFixed(1)),
    };
  },
};
