// The peers of the soak, each private to this run and stopped by its PID at the end: InfluxDB 1.x
// (influxd with its own config and directory), librdkafka's mock cluster (through Python ctypes on
// Debian's librdkafka, with the topic created up front), a database of its own on the PostgreSQL
// running on the machine, and the simulated agents in a child process (fleet.ts). They are the
// connector tests' own peer fixtures (test/connectors/peers/), so the soak talks to the same peers.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { influx1, type Influx1 } from '../test/connectors/peers/influxdb-v1.js';
import { startMockCluster, type MockCluster } from '../test/connectors/peers/kafka-mock.js';
import { postgresDb, type TestDb } from '../test/connectors/peers/sql.js';
import type { FleetCounts, FleetReady, FleetRequest } from './fleet.js';
import { SeqTally } from './tally.js';

const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = dirname(HERE);

export const TRAP_TOPIC = 'soak-traps';
export const SQL_TABLE = 'soak_webhook';
export const INFLUX_DB = 'soak';
/** The first column the poll walks: the fleet counts walks by their first request naming it. */
export const WALK_ROOT = '1.3.6.1.2.1.31.1.1.1.6'; // IF-MIB::ifHCInOctets

export interface FleetProcess {
  agents: FleetReady['agents'];
  /** Walks each agent was asked for so far. */
  walks(): Promise<number[]>;
  stop(): Promise<void>;
}

async function startFleet(agents: number): Promise<FleetProcess> {
  const child = fork(join(HERE, 'fleet.ts'), [], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: { type: string }) => {
        if (m.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      };
      const onExit = (code: number | null) => reject(new Error(`the fleet process exited (${code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const send = (m: FleetRequest) => child.send(m);
  const ready = next<FleetReady>('ready');
  send({ type: 'start', agents, walkRoot: WALK_ROOT });
  const r = await ready;
  return {
    agents: r.agents,
    async walks() {
      const c = next<FleetCounts>('counts');
      send({ type: 'counts' });
      return (await c).walks;
    },
    stop: () => stopChild(child, () => child.disconnect()),
  };
}

/** Ends a child: `gently` first (closing its stdin or channel), SIGKILL by PID after 5 s. */
async function stopChild(child: ChildProcess, gently: () => void) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  gently();
  const t = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

/**
 * Reads the trap topic from the beginning for the whole run with `kcat -C` (Debian's C client, not
 * the connector's kafkajs), tallying the sequence numbers as they come: the mock keeps only the
 * newest 5 MB of a partition, so reading at the end could miss the oldest messages.
 */
export function kafkaTally(brokers: string[], topic: string) {
  const tally = new SeqTally();
  const p = spawn('kcat', ['-C', '-b', brokers.join(','), '-t', topic, '-o', 'beginning', '-q', '-u', '-f', '%s\n'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let rest = '';
  let err = '';
  p.stdout!.setEncoding('utf8').on('data', (d: string) => {
    rest += d;
    const lines = rest.split('\n');
    rest = lines.pop()!;
    for (const l of lines) tally.addText(l);
  });
  p.stderr!.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-2000)));
  return { tally, error: () => err, stop: () => stopChild(p, () => p.kill('SIGTERM')) };
}

export interface Peers {
  influx: Influx1;
  kafka: MockCluster;
  kafkaConsumer: ReturnType<typeof kafkaTally>;
  db: TestDb;
  fleet: FleetProcess;
  stop(): Promise<void>;
}

/** Kafka partitions: the mock's 100,000 messages per partition, with room to spare for the run. */
const partitionsFor = (trapRate: number, minutes: number) => Math.max(4, Math.ceil((trapRate * minutes * 60) / 50_000));

export async function startPeers(o: { agents: number; trapRate: number; minutes: number }): Promise<Peers> {
  const started: { stop(): Promise<void> }[] = [];
  const stop = async () => {
    for (const p of started.reverse()) await p.stop().catch((e: Error) => process.stderr.write(`soak: stopping a peer: ${e.message}\n`));
  };
  try {
    const influx = await influx1();
    started.push(influx);
    await influx.query(`CREATE DATABASE ${INFLUX_DB}`);
    const kafka = await startMockCluster(3, { [TRAP_TOPIC]: partitionsFor(o.trapRate, o.minutes) });
    started.push(kafka);
    const kafkaConsumer = kafkaTally(kafka.brokers, TRAP_TOPIC);
    started.push(kafkaConsumer);
    const db = await postgresDb();
    started.push(db);
    await db.exec(`CREATE TABLE ${SQL_TABLE} (seq bigint, sent_at text, pad text)`);
    const fleet = await startFleet(o.agents);
    started.push(fleet);
    return { influx, kafka, kafkaConsumer, db, fleet, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
