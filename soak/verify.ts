// Counting at the sinks: every sequence number sent must be there (duplicates allowed, counted).
// Syslog: the NDJSON files; traps: the Kafka topic (tallied while the run goes, peers.ts);
// webhook: the PostgreSQL table; polling: the points in InfluxDB against the walks each agent
// answered (every row of every walk is one point: target, ifIndex and poll time).
import { createReadStream, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Peers } from './peers.js';
import { INFLUX_DB, SQL_TABLE } from './peers.js';
import { POLL_MEASUREMENT } from './pipelines.js';
import { SeqTally } from './tally.js';

export interface StreamCount {
  sent: number;
  received: number;
  missing: number;
  duplicates: number;
  firstMissing: number[];
}

export async function ndjsonTally(dir: string): Promise<SeqTally> {
  const tally = new SeqTally();
  if (!existsSync(dir)) return tally;
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.ndjson'))
    .sort()) {
    const lines = createInterface({ input: createReadStream(join(dir, f), 'utf8'), crlfDelay: Infinity });
    for await (const l of lines) tally.addText(l);
  }
  return tally;
}

export async function sqlTally(peers: Peers): Promise<SeqTally> {
  const tally = new SeqTally();
  const rows = await peers.db.exec(`SELECT seq, count(*) AS n FROM ${SQL_TABLE} GROUP BY seq`);
  for (const r of rows) tally.add(Number(r.seq), Number(r.n));
  return tally;
}

/** Points per agent in InfluxDB against walks x interfaces; an agent short of points is "missing" that many. */
export async function pollCount(peers: Peers, walks: number[]): Promise<StreamCount & { agentsShort: string[] }> {
  const r = await peers.influx.query(`SELECT count("ifHCInOctets") FROM "${POLL_MEASUREMENT}" GROUP BY "_target"`, INFLUX_DB);
  const err = r.results[0]?.error;
  if (err) throw new Error(`InfluxDB: ${err}`);
  const points = new Map<string, number>();
  for (const s of r.results[0]?.series ?? []) points.set((s as unknown as { tags: Record<string, string> }).tags._target!, Number(s.values[0]![1]));
  let sent = 0;
  let received = 0;
  let missing = 0;
  let duplicates = 0;
  const agentsShort: string[] = [];
  peers.fleet.agents.forEach((a, i) => {
    const want = walks[i]! * a.interfaces;
    const got = points.get(`127.0.0.1:${a.port}`) ?? 0;
    sent += want;
    received += got;
    if (got < want) {
      missing += want - got;
      if (agentsShort.length < 10) agentsShort.push(`${a.sysName}: ${got}/${want}`);
    } else duplicates += got - want;
  });
  return { sent, received, missing, duplicates, firstMissing: [], agentsShort };
}
