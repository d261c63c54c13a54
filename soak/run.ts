// `npm run soak -- --minutes N`: a real `svc serve` under a steady load of four streams for N
// minutes, sampled every 10 s, then checked: RSS and descriptors flat, no record lost, event-loop
// delay p99 under 50 ms (verdict.ts). Exit code 0 when every check passes, 1 otherwise. Results
// in --out: samples.jsonl, summary.json, soak.svg and soak.png, daemon.log. docs/reliability.md (Soak).
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeSyslogPort } from '../test/connectors/peers/syslog.js';
import { prepareDaemon, type SoakDaemon } from './daemon.js';
import { syslogLoad, trapLoad, webhookLoad } from './load.js';
import { parseOptions, type SoakOptions } from './options.js';
import { ROOT, startPeers, type Peers } from './peers.js';
import { PIPELINES, WEBHOOK_PATH, writePipelines } from './pipelines.js';
import { soakSvg, writePlot } from './plot.js';
import { parseProm } from './prom.js';
import { apiReader, controlLoopDelay, takeSample, type Sample } from './sample.js';
import { referenceSeconds, verdict, type Check } from './verdict.js';
import { ndjsonTally, pollCount, sqlTally, type StreamCount } from './verify.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stderr.write(`soak: ${s}\n`);

/** Waits until `f` is true (checked every 500 ms), or fails naming `what`. */
async function until(what: string, f: () => Promise<boolean>, ms: number, daemon?: SoakDaemon) {
  const end = Date.now() + ms;
  while (!(await f().catch(() => false))) {
    if (daemon?.exited()) throw new Error(daemon.exited());
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

const getJson = async <T>(url: string): Promise<T> => {
  const r = await fetch(url);
  if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
  return (await r.json()) as T;
};

/** The listening sources are bound (connected) and the streams running, so no datagram is sent into nothing. */
async function streamsReady(d: SoakDaemon) {
  const list = await getJson<{ name: string; status: string }[]>(`${d.url}/api/pipelines`);
  const streams = [PIPELINES.syslog, PIPELINES.traps, PIPELINES.webhook];
  if (!streams.every((n) => list.find((p) => p.name === n)?.status === 'running')) return false;
  const s = parseProm(await (await fetch(`${d.url}/metrics`)).text());
  const connected = s
    .filter((x) => x.name === 'svc_connector_state' && x.labels.state === 'connected' && x.labels.component === 'source' && x.value === 1)
    .map((x) => x.labels.pipeline);
  return [PIPELINES.syslog, PIPELINES.traps].every((n) => connected.includes(n));
}

/** Stops the poll pipeline just after a run finished, so that no walk is cut off half way. */
async function stopPolling(d: SoakDaemon) {
  const status = async () => (await getJson<{ status: string }>(`${d.url}/api/pipelines/${PIPELINES.poll}`)).status;
  let sawRunning = false;
  const end = Date.now() + 120_000;
  for (;;) {
    const s = await status();
    if (s === 'running') sawRunning = true;
    else if (sawRunning || Date.now() > end) break;
    await sleep(100);
  }
  await fetch(`${d.url}/api/pipelines/${PIPELINES.poll}/stop`, { method: 'POST' });
  await until('the poll pipeline to stop', async () => (await status()) !== 'running', 60_000);
}

async function countAll(
  peers: Peers,
  workDir: string,
  sent: { syslog: number; traps: number; webhook: number },
): Promise<Record<string, StreamCount & { agentsShort?: string[] }>> {
  const [nd, sql, walks] = await Promise.all([ndjsonTally(join(workDir, 'ndjson')), sqlTally(peers), peers.fleet.walks()]);
  return {
    'syslog -> ndjson': nd.against(sent.syslog),
    'traps -> kafka': peers.kafkaConsumer.tally.against(sent.traps),
    'webhook -> sql': sql.against(sent.webhook),
    'snmp poll -> influxdb': await pollCount(peers, walks),
  };
}

async function soak(o: SoakOptions): Promise<boolean> {
  rmSync(o.out, { recursive: true, force: true });
  mkdirSync(o.out, { recursive: true });
  const workDir = mkdtempSync(join(tmpdir(), 'svc-soak-'));
  const samplesFile = join(o.out, 'samples.jsonl');
  const cleanups: (() => Promise<unknown>)[] = [async () => rmSync(workDir, { recursive: true, force: true })];
  const cleanup = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch((e: Error) => log(`cleanup: ${e.message}`));
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(sig, () => void cleanup().finally(() => process.exit(130)));
  try {
    log(`peers: influxd, kafka mock, postgres database, ${o.agents} simulated agents`);
    const peers = await startPeers(o);
    cleanups.push(() => peers.stop());
    const prepared = await prepareDaemon(workDir, o.daemon, join(o.out, 'daemon.log'));
    const [syslogPort, trapPort] = [await freeSyslogPort(), await freeSyslogPort()];
    writePipelines(prepared.pipelineDir, {
      syslogPort,
      trapPort,
      ndjsonDir: join(workDir, 'ndjson'),
      kafkaBrokers: peers.kafka.brokers,
      pgUrl: peers.db.url,
      influxUrl: peers.influx.url,
      agentPorts: peers.fleet.agents.map((a) => a.port),
      pollSeconds: o.pollSeconds,
    });
    const daemon = await prepared.start();
    cleanups.push(() => daemon.stop());
    log(`svc serve (${o.daemon}) pid ${daemon.pid} at ${daemon.url}`);
    await until('the streams to run and the listeners to bind', () => streamsReady(daemon), 60_000, daemon);

    // A scrape now, so that the first window of the event-loop histogram starts with the load.
    await fetch(`${daemon.url}/metrics`).then((r) => r.arrayBuffer());
    const loads = {
      syslog: syslogLoad(syslogPort, o.syslogRate),
      traps: trapLoad(trapPort, o.trapRate),
      webhook: webhookLoad(`${daemon.url}/webhooks/${WEBHOOK_PATH}`, o.webhookRate),
    };
    const api = apiReader(daemon.url);
    const control = controlLoopDelay();
    cleanups.push(async () => control.stop());
    const began = performance.now();
    const samples: Sample[] = [];
    const sentNow = () => ({ syslog: loads.syslog.load.sent, traps: loads.traps.load.sent, webhook: loads.webhook.load.sent });
    const sample = async (phase: Sample['phase']) => {
      const s = await takeSample(daemon.url, daemon.pid, (performance.now() - began) / 1000, phase, samples.at(-1), sentNow(), api.take(), control.take());
      samples.push(s);
      appendFileSync(samplesFile, JSON.stringify(s) + '\n');
      return s;
    };
    const endAt = began + o.minutes * 60_000;
    let nextSample = began + o.sampleSeconds * 1000;
    let lastReport = 0;
    while (nextSample <= endAt + 1) {
      await sleep(Math.max(0, nextSample - performance.now()));
      if (daemon.exited()) throw new Error(daemon.exited());
      const s = await sample('load');
      nextSample += o.sampleSeconds * 1000;
      if (s.t - lastReport >= 60 || nextSample > endAt + 1) {
        lastReport = s.t;
        log(
          `${(s.t / 60).toFixed(1)} min: rss ${s.proc_rss_mb} MB, heap ${s.heap_used_mb} MB, fds ${s.fds} (${s.fds - s.fds_own} of them the clients' connections), loop p99 ${s.eventloop_p99_ms} ms (soak process ${s.control_p99_ms} ms), cpu ${s.cpu_pct} %, load ${s.loadavg.toFixed(1)}, out/s ${JSON.stringify(s.out_per_sec)}`,
        );
      }
    }

    log('load stopped; draining');
    const [sy, tr, wh] = await Promise.all([loads.syslog.stop(), loads.traps.stop(), loads.webhook.stop()]);
    const sent = { syslog: sy.issued, traps: tr.issued, webhook: wh.issued };
    await stopPolling(daemon);
    api.stop();
    // Counted again until nothing is missing or the drain time is over (the sinks flush on their own time).
    let counts = await countAll(peers, workDir, sent);
    const drainEnd = Date.now() + o.drainSeconds * 1000;
    while (Object.values(counts).some((c) => c.missing > 0) && Date.now() < drainEnd) {
      await sleep(3000);
      counts = await countAll(peers, workDir, sent);
    }
    await sample('drain');
    const checks: Check[] = verdict(samples, o.minutes, counts);
    const loadErrors = { syslog: sy, traps: tr, webhook: wh };
    const last = samples.filter((s) => s.phase === 'load').at(-1)!;
    const summary = {
      options: o,
      daemon: o.daemon === 'dist' ? 'node dist/cli/main.js serve' : 'node --import tsx src/cli/main.ts serve',
      pass: checks.every((c) => c.pass),
      checks,
      counts,
      load: loadErrors,
      api: api.stats,
      dropped_at_sources: last.dropped,
      errors: last.errors,
      dlq: last.dlq,
      samples: samples.length,
    };
    writeFileSync(join(o.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
    try {
      await writePlot(
        soakSvg(
          samples,
          referenceSeconds(o.minutes),
          `svc soak: ${o.minutes} min, syslog ${o.syslogRate}/s, traps ${o.trapRate}/s, webhook ${o.webhookRate}/s, ${o.agents} agents every ${o.pollSeconds} s`,
        ),
        join(o.out, 'soak.svg'),
        join(o.out, 'soak.png'),
      );
    } catch (e) {
      log(`plot: ${(e as Error).message} (the SVG is written; the PNG needs /usr/bin/chromium)`);
    }
    const lines = [
      `svc soak, ${o.minutes} min: ${summary.pass ? 'PASS' : 'FAIL'}`,
      ...checks.map((c) => `  ${c.pass ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`),
      `  API: ${api.stats.requests} requests, ${api.stats.failures} failed, slowest ${Math.round(api.stats.max_ms)} ms`,
      `  dropped at sources: ${JSON.stringify(last.dropped)}; errors: ${JSON.stringify(last.errors)}; dlq: ${JSON.stringify(last.dlq)}`,
      `  results: ${o.out} (samples.jsonl, summary.json, soak.png, daemon.log)`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
    return summary.pass;
  } finally {
    await cleanup();
  }
}

soak(parseOptions(process.argv.slice(2), ROOT)).then(
  (pass) => process.exit(pass ? 0 : 1),
  (e: Error) => {
    process.stderr.write(`soak: ${e.stack ?? e.message}\n`);
    process.exit(1);
  },
);
