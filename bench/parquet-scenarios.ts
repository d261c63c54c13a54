// Parquet benchmarks. `parquet-roundtrip`: the 1M-record interface NDJSON -> parquet files (one per
// batch) -> NDJSON, both through runPipeline. `parquet-read-large`: one 2M-row parquet file (20 row
// groups) -> NDJSON, to show that memory follows the row group, not the file.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ParquetWriter, schemaFromColumnData } from 'hyparquet-writer';
import { fileWriter } from 'hyparquet-writer/src/node.js';
import { columnOf } from '../src/plugins/serializers/parquet/write.js';
import type { Rec } from '../src/plugins/types.js';
import { DATA_DIR, interfaceRecord, ndjsonFile } from './data.js';
import { runBench } from './pipeline.js';
import type { Measured, Scenario } from './scenarios.js';

const RECORDS = 1_000_000;
const LARGE_RECORDS = 2_000_000;
const LARGE_GROUP = 100_000;

/** Seconds of one leg (the output directory is made fresh). */
const timed = async (
  name: string,
  threads: number,
  dir: string,
  pattern: string,
  serializerIn: string,
  serializerOut: string,
  out: string,
  filename: string,
  expected: number,
) => (await runBench({ name, threads, dir, pattern, serializerIn, serializerOut, out, filename, expected })).seconds;

const dirBytes = (d: string) => readdirSync(d).reduce((n, f) => n + statSync(join(d, f)).size, 0);
const round = (n: number, digits = 3) => Number(n.toFixed(digits));

export const parquetRoundtrip: Scenario = {
  threads: [1, 2],
  prepare: async () => void (await ndjsonFile(RECORDS)),
  async run(threads): Promise<Measured> {
    const input = await ndjsonFile(RECORDS);
    const mid = join(DATA_DIR, 'out', `parquet-roundtrip-${threads}`, 'parquet');
    const back = join(DATA_DIR, 'out', `parquet-roundtrip-${threads}`, 'ndjson');
    const write = await timed('pq-write', threads, dirname(input), '*.ndjson', '{ type: ndjson }', '{ type: parquet }', mid, 'interfaces.parquet', RECORDS);
    const read = await timed('pq-read', threads, mid, '*.parquet', '{ type: parquet }', '{ type: ndjson }', back, 'interfaces.ndjson', RECORDS);
    return {
      records: RECORDS,
      seconds: round(write + read),
      records_per_sec: Math.round(RECORDS / (write + read)),
      write_records_per_sec: Math.round(RECORDS / write),
      read_records_per_sec: Math.round(RECORDS / read),
      parquet_files: readdirSync(mid).length,
      parquet_mb: round(dirBytes(mid) / 2 ** 20, 1),
    };
  },
};

/** One large snappy file written row group by row group (bounded memory), cached under .bench-data. */
async function largeParquetFile(): Promise<string> {
  const file = join(DATA_DIR, `parquet-${LARGE_RECORDS}`, 'interfaces.parquet');
  if (existsSync(file) && statSync(file).size > 0) return file;
  mkdirSync(dirname(file), { recursive: true });
  const batch = (from: number): Rec[] => Array.from({ length: LARGE_GROUP }, (_, i) => JSON.parse(interfaceRecord(from + i)) as Rec);
  const columns = (recs: Rec[]) => Object.keys(recs[0]!).map((name) => columnOf(name, recs));
  const first = columns(batch(0));
  const pq = new ParquetWriter({ writer: fileWriter(file), schema: schemaFromColumnData({ columnData: first }) });
  for (let from = 0; from < LARGE_RECORDS; from += LARGE_GROUP) {
    pq.write({ columnData: from === 0 ? first : columns(batch(from)), rowGroupSize: LARGE_GROUP });
  }
  pq.finish();
  return file;
}

export const parquetReadLarge: Scenario = {
  threads: [1],
  prepare: async () => void (await largeParquetFile()),
  async run(threads): Promise<Measured> {
    const file = await largeParquetFile();
    const out = join(DATA_DIR, 'out', `parquet-read-large-${threads}`);
    const seconds = await timed(
      'pq-read-large',
      threads,
      dirname(file),
      '*.parquet',
      '{ type: parquet }',
      '{ type: ndjson }',
      out,
      'interfaces.ndjson',
      LARGE_RECORDS,
    );
    return {
      records: LARGE_RECORDS,
      seconds: round(seconds),
      records_per_sec: Math.round(LARGE_RECORDS / seconds),
      file_mb: round(statSync(file).size / 2 ** 20, 1),
      row_groups: LARGE_RECORDS / LARGE_GROUP,
    };
  },
};
