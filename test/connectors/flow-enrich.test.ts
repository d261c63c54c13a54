// Interface enrichment (enrich_interfaces) against Debian's snmpd serving the exporter's
// interfaces (IF-MIB ifXTable rows): flows get in_if_name/alias/speed and out_*, an ifAlias changed
// on the agent shows at the next refresh and after an exporter restart, and an exporter without an
// SNMP agent still has its flows delivered, without names, with a counted failure.
import { createSocket, type Socket } from 'node:dgram';
import { Value } from '@sinclair/typebox/value';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/log.js';
import { enrichConfig, InterfaceEnricher, type EnrichConfig, type IfInfo, type UnnamedReason } from '../../src/plugins/connectors/flow/enrich.js';
import type { Rec } from '../../src/plugins/types.js';
import { netflow5 } from '../helpers/flow-wire.js';
import { until } from '../helpers/wait.js';
import { flowPipeline, freeUdpPort } from './peers/flow.js';
import { startInterfaceAgent, type AgentInterface, type InterfaceAgent } from './peers/snmpd-interfaces.js';

type Run = Awaited<ReturnType<typeof flowPipeline>>;
const runs: Run[] = [];
const agents: InterfaceAgent[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const r of runs.splice(0)) await r.end();
  for (const a of agents.splice(0)) await a.stop();
  for (const s of sockets.splice(0)) s.close();
});

const IFS: AgentInterface[] = [
  { index: 101, name: 'ge-0/0/1', alias: 'uplink to core-1', speed: 10_000 },
  { index: 102, name: 'ge-0/0/2', alias: 'customer ACME', speed: 1000 },
];
const flow = (input: number, output: number, sport = 1000) => ({
  src: '10.0.0.1',
  dst: '10.0.0.2',
  packets: 3,
  bytes: 180,
  sport,
  dport: 443,
  protocol: 6,
  input,
  output,
});

async function agent() {
  const a = await startInterfaceAgent(IFS);
  agents.push(a);
  return a;
}
async function started(source: Record<string, unknown>) {
  const r = await flowPipeline(source);
  runs.push(r);
  return r;
}

describe('flow enrich_interfaces against snmpd', () => {
  it('names both interfaces of every flow from the exporter’s IF-MIB, the first flows included', async () => {
    const a = await agent();
    const run = await started({ protocol: 'netflow5', enrich_interfaces: { port: a.port, community: 'public' } });
    // The first datagram arrives before anything is cached: its flows wait for the poll.
    await run.send(netflow5({ seq: 0 }, [flow(101, 102), flow(102, 101, 1001), flow(7, 0, 1002)]));
    const recs = await until(() => (run.records().length === 3 ? run.records() : undefined), 15_000, 'three flows');
    expect(recs[0]).toMatchObject({
      ingressInterface: 101,
      in_if_name: 'ge-0/0/1',
      in_if_alias: 'uplink to core-1',
      in_if_speed: 10_000,
      egressInterface: 102,
      out_if_name: 'ge-0/0/2',
      out_if_alias: 'customer ACME',
      out_if_speed: 1000,
    });
    expect(recs[1]).toMatchObject({ in_if_name: 'ge-0/0/2', out_if_name: 'ge-0/0/1' });
    // An ifIndex the agent does not have, and 0 (unknown), get no names.
    expect(Object.keys(recs[2]!).filter((k) => /_if_/.test(k))).toEqual([]);
    expect(run.events.filter((e) => e.event === 'enrich_failure')).toEqual([]);
  }, 60_000);

  it('an ifAlias changed on the agent is picked up at the next refresh', async () => {
    const a = await agent();
    const run = await started({ protocol: 'netflow5', enrich_interfaces: { port: a.port, refresh_seconds: 1 } });
    await run.send(netflow5({ seq: 0 }, [flow(101, 102)]));
    await until(() => run.records().length === 1, 15_000, 'the first flow');
    expect(run.records()[0]).toMatchObject({ in_if_alias: 'uplink to core-1' });
    a.setAlias(101, 'uplink to core-2 (moved)');
    // Flows keep the cached alias until a refresh has read the new one.
    let seq = 1;
    await until(
      async () => {
        await run.send(netflow5({ seq, uptime: 100_000 + seq }, [flow(101, 102)]));
        seq++;
        return run.records().some((r) => r.in_if_alias === 'uplink to core-2 (moved)');
      },
      20_000,
      'a flow with the new alias',
      200,
    );
    expect(run.records().every((r) => r.in_if_name === 'ge-0/0/1')).toBe(true);
  }, 60_000);

  it('an exporter restart (sysUptime back) makes the next flows’ interfaces polled again', async () => {
    const a = await agent();
    const run = await started({ protocol: 'netflow5', enrich_interfaces: { port: a.port, refresh_seconds: 3600 } });
    await run.send(netflow5({ seq: 0, uptime: 500_000 }, [flow(102, 101)]));
    await until(() => run.records().length === 1, 15_000, 'the first flow');
    a.setAlias(102, 'customer ACME (renumbered)');
    await run.send(netflow5({ seq: 1, uptime: 600_000 }, [flow(102, 101)]));
    await until(() => run.records().length === 2, 15_000, 'the second flow');
    // Within the refresh interval, no restart: still the cached alias.
    expect(run.records()[1]).toMatchObject({ in_if_alias: 'customer ACME' });
    await run.send(netflow5({ seq: 0, uptime: 1000 }, [flow(102, 101)]));
    await until(() => run.events.some((e) => e.event === 'restart'), 10_000, 'the restart counted');
    let seq = 1;
    await until(
      async () => {
        await run.send(netflow5({ seq, uptime: 1000 + seq }, [flow(102, 101)]));
        seq++;
        return run.records().some((r) => r.in_if_alias === 'customer ACME (renumbered)');
      },
      20_000,
      'a flow with the alias read after the restart',
      200,
    );
  }, 60_000);

  it('an exporter without an SNMP agent has its flows delivered without names, and the failure counted', async () => {
    const silent = await freeUdpPort();
    const run = await started({ protocol: 'netflow5', enrich_interfaces: { port: silent, timeout: 0.3, retries: 0, refresh_seconds: 3600 } });
    await run.send(netflow5({ seq: 0 }, [flow(101, 102)]), netflow5({ seq: 1 }, [flow(102, 101)]));
    const recs = await until(() => (run.records().length === 2 ? run.records() : undefined), 15_000, 'both flows');
    for (const r of recs) {
      expect(r).toMatchObject({ exporter: '127.0.0.1', packetDeltaCount: 3 });
      expect(Object.keys(r).filter((k) => /_if_/.test(k))).toEqual([]);
    }
    await until(() => run.events.some((e) => e.event === 'enrich_failure'), 10_000, 'the failure counted');
    // One poll per refresh interval, not one per flow.
    await run.send(netflow5({ seq: 2 }, [flow(101, 102)]));
    await until(() => run.records().length === 3, 10_000, 'the third flow');
    expect(run.events.filter((e) => e.event === 'enrich_failure')).toEqual([{ event: 'enrich_failure', exporter: '127.0.0.1', n: 1 }]);
  }, 60_000);

  it('an agent that answers too slowly holds the first flows for wait_seconds at most; they go on without names, counted', async () => {
    // An agent that takes the requests and never answers (a closed port would be refused at once),
    // with an SNMP timeout far longer than the test: the first poll outlives it. Before wait_seconds
    // existed the flows waited for the poll's own deadline (here 30 s per request, longer still for
    // an agent slow on every GETBULK of three walks).
    const hole = createSocket('udp4');
    await new Promise<void>((r) => hole.bind(0, '127.0.0.1', () => r()));
    sockets.push(hole);
    const run = await started({ protocol: 'netflow5', enrich_interfaces: { port: hole.address().port, timeout: 30, retries: 0, wait_seconds: 0.3 } });
    await run.send(netflow5({ seq: 0 }, [flow(101, 102), flow(102, 101, 1001)]));
    const recs = await until(() => (run.records().length === 2 ? run.records() : undefined), 10_000, 'the flows, past the wait');
    for (const r of recs) expect(Object.keys(r).filter((k) => /_if_/.test(k))).toEqual([]);
    expect(run.unnamed).toEqual([{ exporter: '127.0.0.1', reason: 'wait_timeout', n: 2 }]);
    // The poll is still running: later flows do not wait again, and are counted too.
    await run.send(netflow5({ seq: 2 }, [flow(101, 102)]));
    await until(() => run.records().length === 3, 10_000, 'the third flow, at once');
    expect(run.unnamed).toEqual([
      { exporter: '127.0.0.1', reason: 'wait_timeout', n: 2 },
      { exporter: '127.0.0.1', reason: 'wait_timeout', n: 1 },
    ]);
    expect(run.events.filter((e) => e.event === 'enrich_failure')).toEqual([]);
  }, 60_000);

  it('per-exporter entries: a disabled exporter is not polled', async () => {
    const a = await agent();
    const run = await started({
      protocol: 'netflow5',
      enrich_interfaces: { port: a.port, exporters: [{ address: '127.0.0.1', enabled: false }] },
    });
    await run.send(netflow5({ seq: 0 }, [flow(101, 102)]));
    const [r] = await until(() => (run.records().length ? run.records() : undefined), 15_000, 'the flow');
    expect(r).not.toHaveProperty('in_if_name');
    expect(run.events.filter((e) => e.event === 'enrich_failure')).toEqual([]);
  }, 60_000);
});

describe('flow enrich_interfaces: the wait for a first poll is bounded', () => {
  // The poll here is the enricher's seam, not an SNMP peer: one that ends only when the test says
  // (or the source closes), so that what waits meanwhile can be counted exactly.
  function enricher(over: Partial<EnrichConfig>, maxWaiting: number) {
    let answer: ((ifs: Map<number, IfInfo>) => void) | undefined;
    const unnamed: { reason: UnnamedReason; n: number }[] = [];
    const delivered: Rec[] = [];
    const en = new InterfaceEnricher(
      { ...(Value.Default(enrichConfig, {}) as EnrichConfig), ...over },
      silentLogger,
      { unnamed: (_x, reason, n) => void unnamed.push({ reason, n }) },
      { maxExporters: 16, maxWaiting },
      (_exporter, signal) =>
        new Promise((resolve, reject) => {
          answer = resolve;
          signal.addEventListener('abort', () => reject(new Error('closed')));
        }),
    );
    const send = (n: number) =>
      en.enrich(
        '192.0.2.1',
        Array.from({ length: n }, () => ({ ingressInterface: 7 })),
        (recs) => void delivered.push(...recs),
      );
    // The poll starts once it has a slot (a microtask later).
    const polled = async (ifs: Map<number, IfInfo>) => (await until(() => answer, 5000, 'the poll started'))(ifs);
    return { en, unnamed, delivered, send, polled };
  }

  it('holds at most maxWaiting flows; past it they go on at once, without names, counted (wait_full)', async () => {
    const t = enricher({ wait_seconds: 60 }, 100);
    t.send(60);
    t.send(30);
    expect(t.en.waiting).toBe(90);
    t.send(20); // 110 > 100: not held
    expect(t.delivered).toHaveLength(20);
    expect(t.unnamed).toEqual([{ reason: 'wait_full', n: 20 }]);
    expect(t.en.waiting).toBe(90);
    await t.polled(new Map([[7, { name: 'xe-0/0/7' }]]));
    await until(() => t.delivered.length === 110, 5000, 'the held flows');
    expect(t.en.waiting).toBe(0);
    // The held flows are named; the ones past the ceiling went on as they were.
    expect(t.delivered.filter((r) => r.in_if_name === 'xe-0/0/7')).toHaveLength(90);
    t.en.close();
  });

  it('wait_seconds 0: nothing waits', () => {
    const t = enricher({ wait_seconds: 0 }, 100);
    t.send(5);
    expect(t.delivered).toHaveLength(5);
    expect(t.en.waiting).toBe(0);
    expect(t.unnamed).toEqual([{ reason: 'wait_timeout', n: 5 }]);
    t.en.close();
  });

  it('close() hands the held flows on and ends the poll', () => {
    const t = enricher({ wait_seconds: 60 }, 100);
    t.send(3);
    expect(t.delivered).toHaveLength(0);
    t.en.close();
    expect(t.delivered).toHaveLength(3);
    expect(t.en.waiting).toBe(0);
  });
});
