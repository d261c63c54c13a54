// The one conformance suite that every source and sink runs against its real peer (issue 12):
// open and close, the reachability check (ok, wrong port, wrong credentials, no secret in the
// error), one batch, 1,000 records sequentially and with parallel_sinks, loss-free delivery through
// a peer restart or a dropped connection (at-least-once connectors), the standard metrics, and a
// bad config rejected with its path and line. A connector joins by writing its peer fixture
// (test/connectors/peers/<tech>.ts) and one test file that calls `conformance(fixture)`.
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadComponent, loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { runPipeline, type RunOptions, type RunTelemetry } from '../../src/engine/runner.js';
import type { RunRecord } from '../../src/engine/run-record.js';
import { encoderFor } from '../../src/engine/plan.js';
import { Metrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/log.js';
import { registry } from '../../src/plugins/registry.js';
import type { ConnectionState, SinkPlugin, SourcePlugin } from '../../src/plugins/types.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { testDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/fs.js';
import { loadPipeline, outputRecords, seqBodies, until, type Cfg, type Rec } from './helpers.js';
import { elapse, pace } from '../helpers/wait.js';

export type { Cfg, Rec };

/** What a test reads back from the peer: the records a sink wrote into one channel. */
export interface Collector {
  records(): Rec[];
  close(): Promise<void>;
}

export interface SourceSide {
  /** The source config (with `type`) reading `channel` (a topic, queue, subject or key of this test alone). */
  config(channel: string): Cfg;
  /** Creates what must exist before messages are published (a queue, a stream); optional. */
  prepare?(channel: string): Promise<void>;
  /** Puts messages into `channel` with the peer's own client or tool. */
  publish(channel: string, bodies: Buffer[]): Promise<void>;
  /**
   * Sources that read only what arrives after they subscribe (MQTT, NATS, Kafka `latest`) need the
   * subscription in place before publishing: the suite waits for `connected` and this much more.
   */
  settleMs?: number;
  /**
   * Transforms that bring each published body's fields (`seq`) back to the top of the record, for
   * sources whose record is a protocol envelope around the body (a syslog message, a trap varbind).
   */
  transforms?: Cfg[];
  /** Daemon services for sources the daemon serves (webhook-style paths): the hub the fixture serves. */
  services?: RunOptions['services'];
  /** Served sources: posts to the given daemon instead of the fixture's own server (the metrics case). */
  publishTo?(daemonUrl: string, channel: string, bodies: Buffer[]): Promise<void>;
}

export interface SinkSide {
  /** The sink config (with `type`) writing into `channel`. */
  config(channel: string): Cfg;
  /** Starts reading `channel` before anything is written; records as the peer holds them. */
  collect(channel: string): Promise<Collector>;
}

export interface Peer {
  source?: SourceSide;
  sink?: SinkSide;
  /** The same config pointing at a loopback port where nothing listens. */
  wrongPort(cfg: Cfg): Cfg;
  /** The same config with a wrong password or token; absent when the peer takes no credentials (say why). */
  wrongCredentials?(cfg: Cfg): Cfg;
  noCredentials?: string;
  /** Why a wrong port cannot apply (a path the daemon serves has no port of its own to get wrong). */
  noReachability?: string;
  /** Why an at-least-once connector has no disrupt() (it holds no connection to break: say where the restart is tested). */
  noDisrupt?: string;
  /**
   * Breaks the connectors' connections: restarts the peer or makes it drop them; resolves when the
   * peer accepts connections again. Required for at-least-once connectors.
   */
  disrupt?(): Promise<void>;
  /**
   * Takes the peer down until the returned function brings it back. Fixtures of sinks that touch the
   * peer only when the runtime flushes (file and object sinks publish whole outputs) supply it: the
   * suite then keeps the peer down across the end of a run, so that a flush meets the outage.
   */
  down?(): Promise<() => Promise<void>>;
  stop(): Promise<void>;
}

export interface PeerFixture {
  /** The connector's registry key. */
  type: string;
  /** The roles this peer serves (default: every role the type has): a peer that can only take writes says `['sink']`. */
  roles?: ('source' | 'sink')[];
  /** Names this fixture in the suite's title when a type runs the suite against several peers. */
  label?: string;
  /** Starts (or reaches) the peer for one test file. */
  start(): Promise<Peer>;
  /** A config mistake and the YAML path the diagnostic must name (relative to the component). */
  badConfig: { role: 'source' | 'sink'; set: Cfg; path: string };
}

let channelSeq = 0;
/** A channel name no other test uses (peers are shared across test files and runs). */
export const uniqueChannel = (type: string) => `svc_${type}_${process.pid}_${Date.now().toString(36)}_${++channelSeq}`;

const bodies = (from: number, n: number) => seqBodies(from, n, { pad: 'x'.repeat(32) });

/** Every sequence number 0..n-1 present; duplicates counted (at-least-once allows them, and they are reported). */
export function checkSequence(records: Rec[], n: number) {
  const seen = new Map<number, number>();
  for (const r of records) seen.set(r.seq as number, (seen.get(r.seq as number) ?? 0) + 1);
  const missing: number[] = [];
  for (let i = 0; i < n; i++) if (!seen.has(i)) missing.push(i);
  const duplicates = records.length - seen.size;
  return { missing, duplicates };
}

/** A connector config validated and defaulted as the API does before a check. */
function checked(role: 'source' | 'sink', cfg: Cfg) {
  const r = loadComponent(role, cfg, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

/** Connection states reported per component, in order. */
function recordingTelemetry() {
  const states = new Map<string, ConnectionState[]>();
  const t: RunTelemetry = {
    connection(component, _type, state) {
      const list = states.get(component) ?? [];
      list.push(state);
      states.set(component, list);
    },
  };
  return { t, states, last: (c: string) => states.get(c)?.at(-1) };
}

/** A stream pipeline from the connector's source into local NDJSON files; returns its run handle. */
function startSourceRun(name: string, side: SourceSide, source: Cfg, outDirs: string[], extra: Cfg = {}) {
  const config = loadPipeline({
    name,
    schedule: { type: 'stream' },
    source,
    serializer_in: { type: 'json' },
    ...(side.transforms ? { transforms: side.transforms } : {}),
    serializer_out: { type: 'ndjson' },
    sinks: outDirs.map((d) => ({ type: 'local', path: d, filename_template: 'out.ndjson' })),
    ...extra,
  });
  const stop = new AbortController();
  const tel = recordingTelemetry();
  const done = runPipeline(config, {
    signal: stop.signal,
    telemetry: tel.t,
    log: silentLogger,
    processed: new MemoryProcessedFiles(),
    services: side.services,
  });
  return { stop, done, tel };
}

/** Input files of NDJSON records `{seq}`: `files` files of equal share, in a fresh directory. */
function writeInput(records: number, files = 1): string {
  const dir = join(tempDir('svc-conf-in-'), 'in');
  mkdirSync(dir);
  const per = Math.ceil(records / files);
  for (let f = 0, from = 0; from < records; f++, from += per) {
    const n = Math.min(per, records - from);
    writeFileSync(
      join(dir, `records-${String(f).padStart(4, '0')}.ndjson`),
      bodies(from, n)
        .map((b) => b.toString() + '\n')
        .join(''),
    );
  }
  return dir;
}

/**
 * A manual batch pipeline from NDJSON records `{seq}` into the connector's sink(s). With `input`,
 * it reads that directory and moves what it delivered to `<input>.done` (a second run then reads
 * only what the first left in place).
 */
async function runIntoSinks(
  name: string,
  sinks: Cfg[],
  records: number,
  extra: Cfg = {},
  opts: { telemetry?: RunTelemetry; signal?: AbortSignal; input?: string } = {},
): Promise<RunRecord> {
  const input = opts.input ?? writeInput(records);
  const config = loadPipeline({
    name,
    schedule: { type: 'manual' },
    source: { type: 'local', path: input, ...(opts.input ? { move_after_read: `${input}.done` } : {}) },
    serializer_in: { type: 'ndjson' },
    serializer_out: { type: 'json' },
    sinks,
    ...extra,
  });
  return runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), telemetry: opts.telemetry, signal: opts.signal });
}

export function conformance(fixture: PeerFixture) {
  const type = fixture.type;
  const serves = (role: 'source' | 'sink') => !fixture.roles || fixture.roles.includes(role);
  const sourcePlugin = serves('source') ? (registry.source.get(type) as SourcePlugin | undefined) : undefined;
  const sinkPlugin = serves('sink') ? (registry.sink.get(type) as SinkPlugin | undefined) : undefined;
  let peer: Peer;

  describe(`${type}${fixture.label ? ` (${fixture.label})` : ''}: connector conformance`, () => {
    beforeAll(async () => {
      peer = await fixture.start();
    }, 120_000);
    afterAll(async () => {
      await peer?.stop();
    }, 60_000);

    it('is registered with a delivery guarantee, a reachability check and at least one example per role', () => {
      expect(sourcePlugin ?? sinkPlugin).toBeDefined();
      for (const p of [sourcePlugin, sinkPlugin]) {
        if (!p) continue;
        expect(['at-least-once', 'at-most-once']).toContain(p.delivery.guarantee);
        expect(p.delivery.why.length).toBeGreaterThan(20);
        expect(typeof p.test).toBe('function');
        expect(p.examples.length).toBeGreaterThan(0);
      }
    });

    it('rejects a bad config with its YAML path and line', () => {
      const { role, set, path } = fixture.badConfig;
      const side = role === 'source' ? peer.source! : peer.sink!;
      const component = { ...side.config('bad'), ...set };
      const pipeline: Cfg = {
        name: 'bad-config',
        schedule: { type: role === 'source' && sourcePlugin?.mode === 'stream' ? 'stream' : 'manual' },
        source: role === 'source' ? component : { type: 'local', path: '/tmp' },
        sinks: [role === 'sink' ? component : { type: 'local', path: '/tmp' }],
      };
      const r = loadPipelineText(stringify({ version: '1', pipeline }), { env: {} });
      expect(r.config).toBeUndefined();
      const where = role === 'source' ? `pipeline.source.${path}` : `pipeline.sinks[0].${path}`;
      const d = r.diagnostics.find((x) => x.path === where);
      expect(d, `a diagnostic at ${where}; got ${r.diagnostics.map((x) => formatDiagnostic(x)).join('; ')}`).toBeDefined();
      expect(d!.line).toBeGreaterThan(0);
    });

    for (const role of ['source', 'sink'] as const) {
      const plugin = role === 'source' ? sourcePlugin : sinkPlugin;
      if (!plugin) continue;
      const sideOf = () => (role === 'source' ? peer.source! : peer.sink!);

      it(`${role}: test() is ok against the peer, and fails clearly on a wrong port`, async () => {
        const ch = uniqueChannel(type);
        if (role === 'source') await peer.source!.prepare?.(ch);
        const cfg = sideOf().config(ch);
        const ok = await testConnector(role, checked(role, cfg));
        expect(ok, JSON.stringify(ok)).toMatchObject({ ok: true, error: null });
        expect(ok.latency_ms).toBeGreaterThanOrEqual(0);
        if (peer.noReachability) return;
        const bad = await testConnector(role, checked(role, peer.wrongPort(cfg)), { timeoutMs: 8000 });
        expect(bad.ok).toBe(false);
        expect(bad.latency_ms).toBeNull();
        expect(bad.error).toMatch(new RegExp(`^${type}: `));
        expect(bad.error!.length).toBeGreaterThan(type.length + 5);
      });

      it(`${role}: test() fails on wrong credentials without showing them`, async () => {
        if (!peer.wrongCredentials) {
          expect(peer.noCredentials, 'a fixture without wrongCredentials says why').toBeTruthy();
          return;
        }
        const cfg = peer.wrongCredentials(sideOf().config(uniqueChannel(type)));
        const r = await testConnector(role, checked(role, cfg), { timeoutMs: 8000 });
        expect(r.ok).toBe(false);
        for (const v of Object.values(cfg)) {
          if (typeof v === 'string' && /wrong/.test(v)) expect(r.error).not.toContain(v);
        }
      });
    }

    if (sourcePlugin) {
      const streamish = sourcePlugin.mode !== 'batch';
      describe('source', () => {
        it.runIf(streamish)('opens and closes: connecting, connected, and a clean end when stopped', async () => {
          const ch = uniqueChannel(type);
          await peer.source!.prepare?.(ch);
          const run = startSourceRun(`conf-open-${type}`, peer.source!, peer.source!.config(ch), [tempDir('svc-conf-out-')]);
          await until(() => run.tel.last('source') === 'connected', 15_000, 'connected');
          run.stop.abort();
          const rec = await run.done;
          expect(rec.status, JSON.stringify(rec)).toBe('success');
          expect(rec.error).toBeNull();
          expect(run.tel.states.get('source')!.slice(0, 2)).toEqual(['connecting', 'connected']);
        });

        const deliver = async (n: number, sinks: number, extra: Cfg = {}) => {
          const ch = uniqueChannel(type);
          await peer.source!.prepare?.(ch);
          const outs = Array.from({ length: sinks }, () => tempDir('svc-conf-out-'));
          const run = startSourceRun(`conf-${n}-${type}`, peer.source!, peer.source!.config(ch), outs, extra);
          await until(() => run.tel.last('source') === 'connected', 15_000, 'connected');
          await elapse(peer.source!.settleMs ?? 0);
          await peer.source!.publish(ch, bodies(0, n));
          for (const o of outs) await until(() => outputRecords(o).length >= n, 30_000, `${n} records in ${o}`);
          run.stop.abort();
          const rec = await run.done;
          expect(rec.status).toBe('success');
          expect(rec.errors).toEqual([]);
          for (const o of outs) expect(checkSequence(outputRecords(o), n)).toEqual({ missing: [], duplicates: 0 });
          return rec;
        };

        /** A batch source: publish first, then one manual run reads it all. */
        const deliverBatch = async (n: number, sinks: number, extra: Cfg = {}) => {
          const ch = uniqueChannel(type);
          await peer.source!.prepare?.(ch);
          await peer.source!.publish(ch, bodies(0, n));
          const outs = Array.from({ length: sinks }, () => tempDir('svc-conf-out-'));
          const run = startSourceRun(`conf-batch-${n}-${type}`, peer.source!, peer.source!.config(ch), outs, { ...extra, schedule: { type: 'manual' } });
          const rec = await run.done;
          expect(rec.status, JSON.stringify(rec)).toBe('success');
          expect(rec.errors).toEqual([]);
          expect(rec.records_in).toBe(n);
          for (const o of outs) expect(checkSequence(outputRecords(o), n)).toEqual({ missing: [], duplicates: 0 });
          expect(run.tel.states.get('source') ?? ['connected']).toContain('connected');
          return rec;
        };

        for (const [mode, run] of [
          ['stream', deliver],
          ['batch', deliverBatch],
        ] as const) {
          if (sourcePlugin.mode !== 'both' && sourcePlugin.mode !== mode) continue;
          const tag = sourcePlugin.mode === 'both' ? ` (${mode})` : '';
          it(`one batch${tag}`, async () => {
            const rec = await run(10, 1);
            expect(rec.records_in).toBe(10);
            expect(rec.records_out).toBe(10);
          });
          it(`1,000 records, sequentially${tag}`, async () => {
            await run(1000, 1);
          });
          it(`1,000 records with parallel_sinks${tag}`, async () => {
            await run(1000, 2, { parallel_sinks: true });
          });
        }

        it.runIf(streamish && sourcePlugin.delivery.guarantee === 'at-least-once')(
          'loses nothing while the peer restarts or the connection drops (sequence numbers, duplicates reported)',
          async () => {
            if (peer.noDisrupt) return;
            expect(peer.disrupt, 'an at-least-once connector needs a disrupt() fixture (or noDisrupt with the reason)').toBeDefined();
            const ch = uniqueChannel(type);
            await peer.source!.prepare?.(ch);
            const out = tempDir('svc-conf-out-');
            const cfg = { ...peer.source!.config(ch), reconnect_delay_seconds: 0.2 };
            const run = startSourceRun(`conf-restart-${type}`, peer.source!, cfg, [out]);
            await until(() => run.tel.last('source') === 'connected', 15_000, 'connected');
            await elapse(peer.source!.settleMs ?? 0);
            await peer.source!.publish(ch, bodies(0, 500));
            await until(() => outputRecords(out).length >= 100, 30_000, 'the first records');
            await peer.disrupt!();
            await until(() => run.tel.states.get('source')!.filter((s) => s === 'connected').length >= 2, 30_000, 'reconnected');
            await elapse(peer.source!.settleMs ?? 0);
            await peer.source!.publish(ch, bodies(500, 500));
            await until(() => checkSequence(outputRecords(out), 1000).missing.length === 0, 60_000, 'all 1,000 sequence numbers');
            run.stop.abort();
            const rec = await run.done;
            const { missing, duplicates } = checkSequence(outputRecords(out), 1000);
            console.log(`[conformance] ${type} source through a disruption: 1000 sent, ${missing.length} missing, ${duplicates} duplicates`);
            expect(missing).toEqual([]);
            expect(rec.status).toBe('success');
            expect(run.tel.states.get('source')).toContain('disconnected');
          },
          120_000,
        );

        it.runIf(streamish)(
          'emits the standard metrics through the daemon',
          async () => {
            const ch = uniqueChannel(type);
            await peer.source!.prepare?.(ch);
            const d = await testDaemon();
            const out = tempDir('svc-conf-out-');
            const name = `conf-metrics-${type}`;
            const yamlText = stringify({
              version: '1',
              pipeline: {
                name,
                schedule: { type: 'stream' },
                source: peer.source!.config(ch),
                serializer_in: { type: 'json' },
                sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
                serializer_out: { type: 'ndjson' },
              },
            });
            expect((await d.call('POST', '/api/pipelines', { yaml: yamlText })).status).toBe(201);
            const connected = `svc_connector_state{pipeline="${name}",component="source",type="${type}",state="connected"} 1`;
            await until(async () => ((await d.call('GET', '/metrics')).text.includes(connected) ? true : undefined), 15_000);
            await elapse(peer.source!.settleMs ?? 0);
            const { publishTo } = peer.source!;
            await (publishTo ? publishTo(d.url, ch, bodies(0, 20)) : peer.source!.publish(ch, bodies(0, 20)));
            const text = await until(async () => {
              const t = (await d.call('GET', '/metrics')).text;
              return new RegExp(`svc_records_in_total\\{pipeline="${name}"\\} 20\\b`).test(t) ? t : undefined;
            }, 20_000);
            expect(text).toMatch(new RegExp(`svc_records_out_total\\{pipeline="${name}"\\} 20\\b`));
            expect(text).toContain(`svc_stream_queue_depth{pipeline="${name}"}`);
            expect(text).toContain(`svc_connector_state_changes_total{pipeline="${name}",component="source",type="${type}",state="connected"} 1`);
            expect((await d.call('DELETE', `/api/pipelines/${name}`)).status).toBe(204);
          },
          60_000,
        ); // a group join (the kafka mock holds a new group 3 s) and a daemon, on a loaded machine
      });
    }

    if (sinkPlugin) {
      describe('sink', () => {
        it('opens and closes without writing', async () => {
          const cfg = loadPipeline({
            name: 'conf-open',
            schedule: { type: 'manual' },
            source: { type: 'local', path: '/tmp' },
            sinks: [peer.sink!.config(uniqueChannel(type))],
          }).sinks[0]!;
          const sink = sinkPlugin.create(cfg as never, {
            pipeline: 'conf-open',
            log: silentLogger,
            signal: new AbortController().signal,
            processed: new MemoryProcessedFiles(),
            skipProcessed: false,
            encoder: encoderFor(registry, { type: 'json' }),
          });
          await sink.open?.({ runId: 'r', pipeline: 'conf-open', startedAt: new Date() });
          await sink.flush?.();
          await sink.close?.();
        });

        const write = async (n: number, sinks: number, extra: Cfg = {}) => {
          const chans = Array.from({ length: sinks }, () => uniqueChannel(type));
          const collectors = await Promise.all(chans.map((c) => peer.sink!.collect(c)));
          try {
            const tel = recordingTelemetry();
            const rec = await runIntoSinks(
              `conf-sink-${n}-${type}`,
              chans.map((c) => peer.sink!.config(c)),
              n,
              extra,
              { telemetry: tel.t },
            );
            expect(rec.status, JSON.stringify(rec)).toBe('success');
            expect(rec.errors).toEqual([]);
            expect(rec.records_out).toBe(n);
            for (const c of collectors) {
              await until(() => c.records().length >= n, 30_000, `${n} records at the peer`);
              expect(checkSequence(c.records(), n)).toEqual({ missing: [], duplicates: 0 });
            }
            expect(tel.states.get('sinks[0] (' + type + ')')).toContain('connected');
            return tel;
          } finally {
            for (const c of collectors) await c.close();
          }
        };

        it('one batch', async () => {
          await write(10, 1);
        });

        it('1,000 records, sequentially', async () => {
          await write(1000, 1, { record_chunk_size: 100 });
        });

        it('1,000 records with parallel_sinks', async () => {
          await write(1000, 2, { parallel_sinks: true, record_chunk_size: 100 });
        });

        it.runIf(sinkPlugin.delivery.guarantee === 'at-least-once')(
          'loses nothing while the peer restarts or the connection drops (retried by the runtime)',
          async () => {
            expect(peer.disrupt, 'an at-least-once connector needs a disrupt() fixture').toBeDefined();
            const ch = uniqueChannel(type);
            const collector = await peer.sink!.collect(ch);
            try {
              const cfg = { ...peer.sink!.config(ch), retry_count: 10, retry_delay_seconds: 0.2 };
              // 20 files of 50 records at 5 writes a second (about 4 s; a disruption may take a second
              // to act): it lands mid-run. A sink that makes writes durable only when the runtime
              // flushes (files, objects) may lose the outputs in flight: the run then leaves their
              // input files in place, and a second run over the same input delivers them.
              const tel = recordingTelemetry();
              const input = writeInput(1000, 20);
              const extra = { record_chunk_size: 50, rate_limit_rps: 5 };
              const running = runIntoSinks(`conf-sink-restart-${type}`, [cfg], 1000, extra, { telemetry: tel.t, input });
              await pace(500); // the disruption lands mid-run
              if (peer.down) {
                // Down until the run ends (its last flush fails) or 6 s pass (retries of 0.2 s doubling outlast that).
                const up = await peer.down();
                await Promise.race([running, pace(6000)]);
                await up();
              } else await peer.disrupt!();
              const rec = await running;
              expect(rec.status, JSON.stringify(rec)).toBe('success');
              const left = readdirSync(input).length;
              // Writes that outlast their retries are not lost: their input files stay for the next
              // run (checked below). Said loudly, since retries are meant to ride the disruption out.
              if (rec.records_out < 1000)
                console.log(`[conformance] ${type} sink: ${1000 - rec.records_out} records not written by the first run: ${JSON.stringify(rec.errors)}`);
              if (left === 0) expect(rec.records_out, JSON.stringify(rec.errors)).toBe(1000);
              if (left > 0) {
                const again = await runIntoSinks(`conf-sink-restart-${type}`, [cfg], 0, extra, { telemetry: tel.t, input });
                expect(again.status, JSON.stringify(again)).toBe('success');
                expect(readdirSync(input)).toEqual([]);
              }
              await until(() => checkSequence(collector.records(), 1000).missing.length === 0, 30_000, 'all 1,000 sequence numbers at the peer');
              const { missing, duplicates } = checkSequence(collector.records(), 1000);
              console.log(
                `[conformance] ${type} sink through a disruption: 1000 written, ${missing.length} missing, ${duplicates} duplicates${left ? ` (${left} of 20 input files written again by a second run)` : ''}`,
              );
              expect(missing).toEqual([]);
              // The disruption reached the sink: it lost its connection and opened it again.
              const states = tel.states.get(`sinks[0] (${type})`)!;
              expect(states).toContain('disconnected');
              expect(states.at(-1)).toBe('connected');
            } finally {
              await collector.close();
            }
          },
          120_000,
        );

        it('emits the connector metrics', async () => {
          const m = new Metrics({ defaults: false });
          const ch = uniqueChannel(type);
          const collector = await peer.sink!.collect(ch);
          try {
            const rec = await runIntoSinks(
              `conf-sink-metrics-${type}`,
              [peer.sink!.config(ch)],
              5,
              {},
              { telemetry: m.telemetry(`conf-sink-metrics-${type}`) },
            );
            expect(rec.status).toBe('success');
            const text = await m.registry.metrics();
            expect(text).toContain(
              `svc_connector_state{pipeline="conf-sink-metrics-${type}",component="sinks[0] (${type})",type="${type}",state="connected"} 1`,
            );
            expect(text).toContain(
              `svc_connector_state_changes_total{pipeline="conf-sink-metrics-${type}",component="sinks[0] (${type})",type="${type}",state="connecting"} 1`,
            );
          } finally {
            await collector.close();
          }
        });
      });
    }
  });
}
