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

export async function ndjsonFile(records: number): Promise<string> {
  const dir = join(DATA_DIR, `ndjson-${records}`);
  const file = join(dir, 'interfaces.ndjson');
  if (existsSync(file) && statSync(file).size > 0) return file;
  mkdirSync(dir, { recursive: true });
  const out = createWriteStream(file);
  let buf: string[] = [];
  for (let i = 0; i < records; i++) {
    buf.push(interfaceRecord(i));
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
