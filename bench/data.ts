// Generated benchmark inputs, cached under .bench-data/ (regenerated when missing).
import { createWriteStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';

export const DATA_DIR = join(process.cwd(), '.bench-data');

/** SNMP-interface-like NDJSON records, ~120 bytes each; ifOperStatus is 1 for 90% of them. */
export function interfaceRecord(i: number): string {
  const host = `rtr-${String(i % 500).padStart(3, '0')}`;
  const ifIndex = (i % 48) + 1;
  return JSON.stringify({
    host,
    ifIndex: String(ifIndex),
    ifDescr: `Gi0/${ifIndex}`,
    ifInOctets: (i * 7919) % 4294967296,
    ifOutOctets: (i * 104729) % 4294967296,
    ifOperStatus: i % 10 === 0 ? 2 : 1,
    ts: 1763715600 + Math.floor(i / 1000),
  });
}

/** A cached generated file of `lines` lines (`lineOf(i)`), written in blocks; its path. */
export async function linesFile(dirName: string, fileName: string, lines: number, lineOf: (i: number) => string): Promise<string> {
  const dir = join(DATA_DIR, dirName);
  const file = join(dir, fileName);
  if (existsSync(file) && statSync(file).size > 0) return file;
  mkdirSync(dir, { recursive: true });
  const out = createWriteStream(file);
  let buf: string[] = [];
  for (let i = 0; i < lines; i++) {
    buf.push(lineOf(i));
    if (buf.length === 10_000) {
      if (!out.write(buf.join('\n') + '\n')) await once(out, 'drain');
      buf = [];
    }
  }
  if (buf.length) out.write(buf.join('\n') + '\n');
  out.end();
  await once(out, 'finish');
  return file;
}

export const ndjsonFile = (records: number): Promise<string> => linesFile(`ndjson-${records}`, 'interfaces.ndjson', records, interfaceRecord);

/** `samples` counter samples over `series` interfaces (round-robin: each series every `series` lines), 60 s apart. */
export function counterSamplesFile(samples: number, series: number): Promise<string> {
  return linesFile(`counters-${samples}-${series}`, 'samples.ndjson', samples, (i) => {
    const id = i % series;
    const round = Math.floor(i / series);
    // Every 50th series wraps its 32-bit counter once.
    const inOctets = (id * 7919 + round * (id % 50 === 0 ? 1_500_000_000 : 1_000_000)) % 4294967296;
    return JSON.stringify({
      host: `rtr-${id % 2000}`,
      ifIndex: Math.floor(id / 2000) + 1,
      ts: 1763715600 + round * 60,
      ifInOctets: inOctets,
      ifOutOctets: round * 500_000 + id,
    });
  });
}
