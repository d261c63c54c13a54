// snmp_poll against real agents: snmpsimd (deterministic data files per community), snmpd (its own
// MIB-II tree, SNMPv3 users) and silent UDP sockets (dead devices). Every documented parameter and
// failure mode has a case here; the shared conformance suite runs at the end.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadComponent } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { testConnector } from '../../src/engine/connector-test.js';
import { runPipeline, type TransformStateIO } from '../../src/engine/runner.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { Metrics } from '../../src/observability/metrics.js';
import { connectorMetrics } from '../../src/plugins/registry.js';
import { silentLogger } from '../../src/observability/log.js';
import { tempDir } from '../helpers/fs.js';
import { conformance } from './conformance.js';
import { loadPipeline, outputRecords, type Cfg } from './helpers.js';
import { SNMPD_USERS, silentAgents, snmpPollFixture, snmprec, startSnmpdV3, startSnmpsim, SYS_UPTIME, type Snmpd, type Snmpsim } from './peers/snmp-poll.js';
import { freeUdpPort } from '../snmp/peers.js';
import { pace } from '../helpers/wait.js';

const IF = '1.3.6.1.2.1.2.2.1';
const IFX = '1.3.6.1.2.1.31.1.1.1';
const IPADDR = '1.3.6.1.2.1.4.20.1';
const BIG = '18446744073709551000'; // above 2^53: must stay exact
const N_IF = 24;

/** The `public` agent: system scalars, ifTable + ifXTable of N_IF interfaces, ipAddrTable of 2 addresses. */
function publicData(): string {
  const l: [string, number, string | number][] = [
    ['1.3.6.1.2.1.1.1.0', 4, 'svc test agent'],
    [SYS_UPTIME, 67, 123456],
    ['1.3.6.1.2.1.1.5.0', 4, 'sim1'],
  ];
  for (let i = 1; i <= N_IF; i++) {
    l.push([`${IF}.1.${i}`, 2, i], [`${IF}.2.${i}`, 4, `eth${i - 1}`], [`${IF}.10.${i}`, 65, 1000 * i]);
    l.push([`${IFX}.1.${i}`, 4, `Gi0/${i}`], [`${IFX}.6.${i}`, 70, i === 1 ? BIG : 5000 * i]);
  }
  for (const [ip, ifx] of [
    ['10.0.0.1', 1],
    ['192.168.1.254', 2],
  ] as const)
    l.push([`${IPADDR}.1.${ip}`, 64, ip], [`${IPADDR}.2.${ip}`, 2, ifx]);
  return snmprec(l);
}

/** Two samples of interface 1 for counter_delta: a 32-bit wrap, a 64-bit wrap, and a small Counter64 that drops. */
const sample = (inOctets: number, hcIn: string, hcOut: string) =>
  snmprec([
    [SYS_UPTIME, 67, 100],
    [`${IF}.1.1`, 2, 1],
    [`${IF}.10.1`, 65, inOctets],
    [`${IFX}.6.1`, 70, hcIn],
    [`${IFX}.10.1`, 70, hcOut],
  ]);

/** Counters that snmpsimd's `numeric` variation moves at a fixed rate per second and wraps. */
const RATE32 = 1.2e9;
const RATE64 = 4e18;
const MOVING = `${SYS_UPTIME}|67|5\n${IF}.1.1|2|1\n${IF}.10.1|65:numeric|rate=${RATE32},wrap=1\n${IFX}.6.1|70:numeric|rate=${RATE64},wrap=1\n`;

let sim: Snmpsim;
let snmpd: Snmpd;
const host = '127.0.0.1';

beforeAll(async () => {
  [sim, snmpd] = await Promise.all([
    startSnmpsim({
      public: publicData(),
      before: sample(4294967000, BIG, '4000000000'),
      after: sample(200, '100', '100'),
      other: snmprec([
        [SYS_UPTIME, 67, 7],
        ['1.3.6.1.2.1.1.5.0', 4, 'other-agent'],
      ]),
      moving: MOVING,
    }),
    startSnmpdV3(),
  ]);
}, 60_000);
afterAll(async () => {
  await sim?.stop();
  await snmpd?.stop();
});

const simSource = (extra: Cfg = {}): Cfg => ({ type: 'snmp_poll', host, port: sim.port, ...extra });

/** One manual run of `source` into NDJSON; the run record and the records written. */
async function poll(source: Cfg, opts: { transforms?: Cfg[]; metrics?: Metrics; state?: TransformStateIO; name?: string } = {}) {
  const out = tempDir('svc-snmp-poll-out-');
  const name = opts.name ?? 'snmp-poll-test';
  const config = loadPipeline({
    name,
    schedule: { type: 'manual' },
    source,
    serializer_in: { type: 'json' },
    ...(opts.transforms ? { transforms: opts.transforms } : {}),
    serializer_out: { type: 'ndjson' },
    sinks: [{ type: 'local', path: out, filename_template: 'out.ndjson' }],
  });
  const rec = await runPipeline(config, {
    log: silentLogger,
    processed: new MemoryProcessedFiles(),
    ...(opts.metrics ? { telemetry: opts.metrics.telemetry(name) } : {}),
    ...(opts.state ? { state: opts.state } : {}),
  });
  return { rec, records: outputRecords(out) };
}

const lintOf = (cfg: Cfg) => loadComponent('source', cfg, { env: {} }).diagnostics.map((d) => `${d.path}: ${d.message}`);

describe('snmp_poll: get', () => {
  it('GETs symbolic and numeric oids into one record with MIB names, _target and _polled_at (a scalar without instance gets .0)', async () => {
    const before = Date.now();
    const { rec, records } = await poll(simSource({ oids: ['sysUpTime', 'SNMPv2-MIB::sysDescr.0', '1.3.6.1.2.1.1.5.0', 'ifHCInOctets.1'] }));
    expect(rec.status, JSON.stringify(rec)).toBe('success');
    expect(rec.errors).toEqual([]);
    expect(records).toHaveLength(1);
    const r = records[0]!;
    expect(r).toMatchObject({ _target: `${host}:${sim.port}`, sysUpTime: 123456, sysDescr: 'svc test agent', sysName: 'sim1', 'ifHCInOctets.1': BIG });
    expect(r._polled_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(r._polled_at as string)).toBeGreaterThanOrEqual(before - 1000);
    expect(r._snmp_widths).toBeUndefined();
  });

  it('resolve_oids: false keeps numeric OIDs as field names', async () => {
    const { records } = await poll(simSource({ oids: ['sysUpTime.0', '1.3.6.1.2.1.1.5.0'], resolve_oids: false }));
    expect(records).toEqual([{ _target: `${host}:${sim.port}`, _polled_at: expect.any(String), [SYS_UPTIME]: 123456, '1.3.6.1.2.1.1.5.0': 'sim1' }]);
  });

  it('an object the agent does not have is left out of the record and noted in the run errors', async () => {
    const { rec, records } = await poll(simSource({ oids: ['sysUpTime.0', 'sysContact.0'] }));
    expect(rec.status).toBe('success');
    expect(records[0]).toHaveProperty('sysUpTime');
    expect(records[0]).not.toHaveProperty('sysContact');
    expect(rec.errors.join('\n')).toMatch(/1\.3\.6\.1\.2\.1\.1\.4\.0 NoSuch(Object|Instance)/);
  });

  it('a bad OID name fails the run naming it; lint refuses a malformed one', async () => {
    const { rec } = await poll(simSource({ oids: ['sysUpTime.0', 'ifInOctetz.1'] }));
    expect(rec.status).toBe('failed');
    expect(rec.error).toMatch(/oids\[1\] "ifInOctetz\.1" is neither a numeric OID nor a name known to the loaded MIBs/);
    expect(lintOf(simSource({ oids: ['sys Up Time'] }))).toEqual([expect.stringMatching(/^oids\[0\]: "sys Up Time" is neither/)]);
    expect(lintOf(simSource({ oids: ['1.3.6.1.2.1.1.9999999999'] })).join()).toMatch(/oids\[0\].*arc above/);
  });
});

describe('snmp_poll: walk', () => {
  it('walk without yield_rows: one record per target, instance suffixes in the names', async () => {
    const { records } = await poll(simSource({ operation: 'walk', oids: ['IF-MIB::ifTable'] }));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ 'ifIndex.1': 1, 'ifDescr.1': 'eth0', [`ifInOctets.${N_IF}`]: 1000 * N_IF });
  });

  it('yield_rows, auto index_depth (INDEX {ifIndex}): one record per interface, ifTable and ifXTable joined, Counter64 exact', async () => {
    const { rec, records } = await poll(simSource({ operation: 'walk', oids: ['ifTable', 'ifXTable'], yield_rows: true }));
    expect(rec.records_in).toBe(N_IF);
    const one = records.find((r) => r.index === '1')!;
    expect(one).toEqual({
      _target: `${host}:${sim.port}`,
      _polled_at: expect.any(String),
      index: '1',
      ifIndex: 1,
      ifDescr: 'eth0',
      ifInOctets: 1000,
      ifName: 'Gi0/1',
      ifHCInOctets: BIG,
    });
    expect(records.find((r) => r.index === '7')).toMatchObject({ ifIndex: 7, ifName: 'Gi0/7', ifHCInOctets: 35000 });
  });

  it('yield_rows with a multi-part index (ipAddrTable INDEX {ipAdEntAddr}: 4 arcs), auto and index_depth 4', async () => {
    for (const depth of [0, 4]) {
      const { records } = await poll(simSource({ operation: 'walk', oids: ['ipAddrTable'], yield_rows: true, index_depth: depth }));
      expect(records.map((r) => [r.index, r.ipAdEntAddr, r.ipAdEntIfIndex])).toEqual([
        ['10.0.0.1', '10.0.0.1', 1],
        ['192.168.1.254', '192.168.1.254', 2],
      ]);
    }
  });

  it('index_depth above 0 takes the last N arcs as the index (1 on ipAddrTable: rows keyed by the last octet)', async () => {
    const { records } = await poll(simSource({ operation: 'walk', oids: ['ipAddrTable'], yield_rows: true, index_depth: 1, resolve_oids: false }));
    expect(records.map((r) => r.index).sort()).toEqual(['1', '254']);
    // Without the MIB the column is the OID before the index.
    expect(records.find((r) => r.index === '254')).toMatchObject({ [`${IPADDR}.1.192.168.1`]: '192.168.1.254', [`${IPADDR}.2.192.168.1`]: 2 });
  });

  it('yield_rows with resolve_oids: false: numeric column names, the last arc as index', async () => {
    const { records } = await poll(simSource({ operation: 'walk', oids: [IF], yield_rows: true, resolve_oids: false }));
    expect(records).toHaveLength(N_IF);
    expect(records.find((r) => r.index === '2')).toEqual({
      _target: expect.any(String),
      _polled_at: expect.any(String),
      index: '2',
      [`${IF}.1`]: 2,
      [`${IF}.2`]: 'eth1',
      [`${IF}.10`]: 2000,
    });
  });

  it('scalars of a yield_rows walk come as one more record', async () => {
    const { records } = await poll(simSource({ operation: 'walk', oids: ['system'], yield_rows: true }));
    expect(records).toEqual([{ _target: expect.any(String), _polled_at: expect.any(String), sysDescr: 'svc test agent', sysUpTime: 123456, sysName: 'sim1' }]);
  });

  it('SNMPv1 walks with GETNEXT', async () => {
    const { records } = await poll(simSource({ version: '1', operation: 'walk', oids: ['ipAddrTable'], yield_rows: true }));
    expect(records.map((r) => r.index)).toEqual(['10.0.0.1', '192.168.1.254']);
  });

  it('max_repetitions sets the GETBULK size (1 still walks everything)', async () => {
    const { records } = await poll(simSource({ operation: 'walk', oids: ['ifXTable'], yield_rows: true, max_repetitions: 1 }));
    expect(records).toHaveLength(N_IF);
  });

  it('yield_rows on snmpd’s real ifTable and ipAddrTable', async () => {
    const { records } = await poll({ type: 'snmp_poll', host, port: snmpd.port, operation: 'walk', oids: ['ifTable', 'ipAddrTable'], yield_rows: true });
    const lo = records.find((r) => r.ifDescr === 'lo')!;
    expect(lo).toMatchObject({ index: String(lo.ifIndex), ifType: 24 });
    expect(records.find((r) => r.index === '127.0.0.1')).toMatchObject({ ipAdEntAddr: '127.0.0.1', ipAdEntNetMask: '255.0.0.0' });
  });
});

describe('snmp_poll: classify and counter_delta', () => {
  it('classify adds _snmp_widths: Counter32 -> 32, Counter64 -> 64 (nothing for other types)', async () => {
    const { records } = await poll(simSource({ operation: 'walk', oids: ['ifTable', 'ifXTable'], yield_rows: true, classify: true }));
    expect(records.find((r) => r.index === '3')!._snmp_widths).toEqual({ ifInOctets: 32, ifHCInOctets: 64 });
    const flat = await poll(simSource({ oids: ['ifInOctets.1', 'ifHCInOctets.1', 'sysUpTime.0'], classify: true }));
    expect(flat.records[0]!._snmp_widths).toEqual({ 'ifInOctets.1': 32, 'ifHCInOctets.1': 64 });
  });

  it('feeds counter_delta across two runs: a 32-bit wrap, a 64-bit wrap beyond 2^53, and the width authoritative', async () => {
    const deltas = async (classify: boolean) => {
      let saved: Record<string, unknown> | null = null;
      const state: TransformStateIO = { load: async () => saved, save: async (s) => void (saved = s) };
      const transforms = [
        { type: 'counter_delta', key_fields: ['_target', 'index'], counters: ['ifInOctets', 'ifHCInOctets', 'ifHCOutOctets'], time_field: '_polled_at' },
      ];
      const src = (community: string) => simSource({ community, operation: 'walk', oids: ['ifTable', 'ifXTable'], yield_rows: true, classify });
      const first = await poll(src('before'), { transforms, state });
      expect(first.rec.status).toBe('success');
      expect(first.records).toEqual([]); // the first sample is the baseline
      const second = await poll(src('after'), { transforms, state });
      expect(second.rec.status, JSON.stringify(second.rec)).toBe('success');
      return second.records[0]!;
    };
    const withWidths = await deltas(true);
    expect(withWidths.ifInOctets_delta).toBe(4294967296 - 4294967000 + 200);
    expect(withWidths.ifHCInOctets_delta).toBe(616 + 100);
    // 4,000,000,000 -> 100 on a Counter64 is a reset, not a 32-bit wrap: no delta.
    expect(withWidths).not.toHaveProperty('ifHCOutOctets_delta');
    // Without the widths counter_delta guesses 32 bits for values below 2^32: a wrong "wrap".
    const guessed = await deltas(false);
    expect(guessed.ifHCOutOctets_delta).toBe(4294967296 - 4000000000 + 100);
  });
});

describe('snmp_poll: moving counters', () => {
  it('counters that move and wrap (snmpsimd numeric variation): every delta across runs matches the rate, wraps included', async () => {
    let saved: Record<string, unknown> | null = null;
    const state: TransformStateIO = { load: async () => saved, save: async (st) => void (saved = st) };
    const transforms = [
      { type: 'counter_delta', key_fields: ['_target', 'index'], counters: ['ifInOctets', 'ifHCInOctets'], time_field: '_polled_at', emit_first: true },
    ];
    const samples: Record<string, unknown>[] = [];
    for (let i = 0; i < 6; i++) {
      if (i) await pace(1000); // one poll a second
      const { rec, records } = await poll(
        simSource({ community: 'moving', operation: 'walk', oids: ['ifTable', 'ifXTable'], yield_rows: true, classify: true }),
        { transforms, state },
      );
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      samples.push(records[0]!);
    }
    const num = (v: unknown) => Number(v);
    let wraps32 = 0;
    let wraps64 = 0;
    for (let i = 1; i < samples.length; i++) {
      const [a, b] = [samples[i - 1]!, samples[i]!];
      const dt = (Date.parse(b._polled_at as string) - Date.parse(a._polled_at as string)) / 1000;
      if (num(b.ifInOctets) < num(a.ifInOctets)) wraps32++;
      if (num(b.ifHCInOctets) < num(a.ifHCInOctets)) wraps64++;
      expect(b._snmp_widths).toEqual({ ifInOctets: 32, ifHCInOctets: 64 });
      expect(num(b.ifInOctets_delta) / (RATE32 * dt)).toBeGreaterThan(0.7);
      expect(num(b.ifInOctets_delta) / (RATE32 * dt)).toBeLessThan(1.3);
      expect(num(b.ifHCInOctets_delta) / (RATE64 * dt)).toBeGreaterThan(0.7);
      expect(num(b.ifHCInOctets_delta) / (RATE64 * dt)).toBeLessThan(1.3);
    }
    expect(wraps32).toBeGreaterThanOrEqual(1);
    expect(wraps64).toBeGreaterThanOrEqual(1);
  }, 30_000);
});

describe('snmp_poll: SNMPv3', () => {
  for (const u of SNMPD_USERS) {
    it(`authPriv ${u.auth_protocol}/${u.priv_protocol} against snmpd`, async () => {
      const cfg = {
        type: 'snmp_poll',
        host,
        port: snmpd.port,
        version: '3',
        security_name: u.name,
        auth_protocol: u.auth_protocol,
        auth_key: u.authKey,
        priv_protocol: u.priv_protocol,
        priv_key: u.privKey,
        oids: ['sysName.0', 'sysUpTime.0'],
      };
      const { rec, records } = await poll(cfg);
      expect(rec.status, JSON.stringify(rec)).toBe('success');
      expect(rec.errors).toEqual([]);
      expect(typeof records[0]!.sysName).toBe('string');
      expect(records[0]!.sysUpTime).toBeGreaterThan(0);
      const ok = await testConnector('source', checked(cfg));
      expect(ok).toMatchObject({ ok: true, error: null });
      // A GETBULK walk over the same session (one engine discovery per target).
      const walked = await poll({ ...cfg, operation: 'walk', oids: ['ipAddrTable'], yield_rows: true });
      expect(walked.records.find((r) => r.index === '127.0.0.1')).toMatchObject({ ipAdEntAddr: '127.0.0.1' });
    });
  }

  it('wrong keys: test() and the run report the USM refusal, never the key', async () => {
    const u = SNMPD_USERS[0]!;
    const cfg = {
      type: 'snmp_poll',
      host,
      port: snmpd.port,
      version: '3',
      security_name: u.name,
      auth_protocol: 'SHA',
      auth_key: 'wrong-auth-key-123',
      priv_protocol: 'AES',
      priv_key: u.privKey,
      oids: ['sysName.0'],
      retries: 0,
    };
    const r = await testConnector('source', checked(cfg), { timeoutMs: 8000 });
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/^snmp_poll: 127\.0\.0\.1:\d+: agent at .* refused the request: wrongDigests; check the SNMPv3 user, protocols and keys/);
    expect(r.error).not.toContain('wrong-auth-key-123');
    expect(r.error).not.toContain(u.privKey);
    const { rec } = await poll(cfg);
    expect(rec.status).toBe('success');
    expect(rec.errors).toEqual([expect.stringMatching(/wrongDigests/)]);
    expect(rec.errors.join()).not.toContain('wrong-auth-key-123');
  });

  it('an unknown user is refused with unknownUserNames', async () => {
    const r = await testConnector(
      'source',
      checked({
        type: 'snmp_poll',
        host,
        port: snmpd.port,
        version: '3',
        security_name: 'nobody-here',
        auth_key: 'whatever-123',
        priv_key: 'whatever-456',
        oids: ['sysName.0'],
      }),
      { timeoutMs: 8000 },
    );
    expect(r.error).toMatch(/unknownUserNames/);
  });

  it('lint: version 3 needs security_name; priv_key needs auth_key; short keys', () => {
    expect(lintOf({ type: 'snmp_poll', host, version: '3', oids: ['sysName.0'] })).toContain('security_name: version 3 needs security_name (the USM user)');
    const l = lintOf({ type: 'snmp_poll', host, version: '3', security_name: 'u', priv_key: 'short', oids: ['sysName.0'] });
    expect(l.join('\n')).toMatch(/priv_key: privacy needs authentication/);
    expect(l.join('\n')).toMatch(/priv_key: an SNMPv3 passphrase has at least 8 characters/);
  });
});

function checked(cfg: Cfg) {
  const r = loadComponent('source', cfg, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

describe('snmp_poll: test(), timeouts and retries', () => {
  it('test() with a wrong community on v2c says there was no answer, and why that may be', async () => {
    const r = await testConnector('source', checked(simSource({ community: 'not-the-community', oids: ['sysUpTime.0'], timeout: 0.5, retries: 3 })), {
      timeoutMs: 8000,
    });
    expect(r.ok).toBe(false);
    // test() tries at most twice, whatever retries says.
    expect(r.error).toBe(`snmp_poll: ${host}:${sim.port}: no answer from udp ${host}:${sim.port} within 0.5s (2 attempts): wrong community, or no agent`);
  });

  it('test() on a port where nothing listens says so', async () => {
    const port = await freeUdpPort();
    const r = await testConnector('source', checked({ type: 'snmp_poll', host, port, oids: ['sysUpTime.0'] }));
    expect(r.error).toBe(`snmp_poll: ${host}:${port}: nothing listens on udp ${host}:${port} (ICMP port unreachable); check the host and port`);
  });

  it('timeout and retries: the request is sent 1 + retries times, then the target is an error of a successful run', async () => {
    const silent = await silentAgents(1);
    try {
      const t0 = performance.now();
      const { rec } = await poll({ type: 'snmp_poll', host, port: silent.ports[0], oids: ['sysUpTime.0'], timeout: 0.2, retries: 2 });
      const took = performance.now() - t0;
      expect(rec.status).toBe('success');
      expect(silent.counts[0]).toBe(3);
      expect(took).toBeGreaterThanOrEqual(550);
      expect(rec.errors).toEqual([
        `snmp_poll: ${host}:${silent.ports[0]}: no answer from udp ${host}:${silent.ports[0]} within 0.2s (3 attempts): wrong community, or no agent`,
      ]);
    } finally {
      await silent.close();
    }
  });

  it('target_timeout_seconds bounds one target, retries included', async () => {
    const silent = await silentAgents(1);
    try {
      const t0 = performance.now();
      const { rec } = await poll({
        type: 'snmp_poll',
        host,
        port: silent.ports[0],
        oids: ['sysUpTime.0'],
        timeout: 1,
        retries: 5,
        target_timeout_seconds: 0.5,
      });
      expect(performance.now() - t0).toBeLessThan(3000);
      expect(rec.status).toBe('success');
      expect(rec.errors).toEqual([`snmp_poll: ${host}:${silent.ports[0]}: no complete answer within target_timeout_seconds (0.5s); skipped`]);
    } finally {
      await silent.close();
    }
  });
});

describe('snmp_poll: fleets', () => {
  it('targets with a dead and a silent device: the run succeeds, each is an error and a metric, the rest is polled', async () => {
    const silent = await silentAgents(1);
    const dead = await freeUdpPort();
    try {
      const metrics = new Metrics({ defaults: false, connectorMetrics: connectorMetrics() });
      const { rec, records } = await poll(
        {
          type: 'snmp_poll',
          targets: [
            { host, port: sim.port, name: 'sim-public' },
            { host, port: dead },
            { host, port: silent.ports[0], name: 'hung' },
            { host, port: sim.port, community: 'other', name: 'sim-other' },
          ],
          oids: ['sysUpTime.0', 'sysName.0'],
          timeout: 0.3,
          retries: 1,
        },
        { metrics, name: 'fleet' },
      );
      expect(rec.status).toBe('success');
      expect(records.map((r) => [r._target, r.sysName]).sort()).toEqual([
        ['sim-other', 'other-agent'],
        ['sim-public', 'sim1'],
      ]);
      expect(rec.errors.sort()).toEqual([
        `snmp_poll: ${host}:${dead}: nothing listens on udp ${host}:${dead} (ICMP port unreachable); check the host and port`,
        `snmp_poll: hung: no answer from udp ${host}:${silent.ports[0]} within 0.3s (2 attempts): wrong community, or no agent`,
      ]);
      const text = await metrics.registry.metrics();
      expect(text).toContain(`svc_snmp_poll_errors_total{pipeline="fleet",target="${host}:${dead}",reason="unreachable"} 1`);
      expect(text).toContain('svc_snmp_poll_errors_total{pipeline="fleet",target="hung",reason="timeout"} 1');
      expect(text).toContain('svc_snmp_poll_seconds_count{pipeline="fleet",target="sim-public"} 1');
      expect(text).toContain('svc_snmp_poll_seconds_count{pipeline="fleet",target="hung"} 1');
      expect(text).not.toContain('svc_snmp_poll_errors_total{pipeline="fleet",target="sim-public"');
      metrics.forget('fleet');
      expect(await metrics.registry.metrics()).not.toContain('target="hung"');
    } finally {
      await silent.close();
    }
  });

  it('one socket goes from target to target (max_concurrency 1): each answer is its own target, a dead device after an answer is still unreachable', async () => {
    const silent = await silentAgents(1);
    const [dead1, dead2] = [await freeUdpPort(), await freeUdpPort()];
    try {
      const metrics = new Metrics({ defaults: false, connectorMetrics: connectorMetrics() });
      const { rec, records } = await poll(
        {
          type: 'snmp_poll',
          targets: [
            { host, port: sim.port, name: 'a' },
            { host, port: dead1 },
            { host, port: sim.port, community: 'other', name: 'b' },
            { host, port: silent.ports[0], name: 'hung' },
            { host, port: dead2 },
            { host, port: sim.port, name: 'c' },
          ],
          oids: ['sysName.0'],
          timeout: 0.2,
          retries: 0,
          max_concurrency: 1,
        },
        { metrics, name: 'reuse' },
      );
      expect(rec.status).toBe('success');
      expect(records.map((r) => [r._target, r.sysName])).toEqual([
        ['a', 'sim1'],
        ['b', 'other-agent'],
        ['c', 'sim1'],
      ]);
      const text = await metrics.registry.metrics();
      for (const dead of [dead1, dead2]) expect(text).toContain(`svc_snmp_poll_errors_total{pipeline="reuse",target="${host}:${dead}",reason="unreachable"} 1`);
      expect(text).toContain('svc_snmp_poll_errors_total{pipeline="reuse",target="hung",reason="timeout"} 1');
    } finally {
      await silent.close();
    }
  });

  it('max_concurrency caps the targets polled at once', async () => {
    const silent = await silentAgents(6);
    try {
      const targets = silent.ports.map((port) => ({ host, port }));
      const t0 = performance.now();
      const { rec } = await poll({ type: 'snmp_poll', targets, oids: ['sysUpTime.0'], timeout: 0.4, retries: 0, max_concurrency: 2 });
      expect(rec.errors).toHaveLength(6);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(1150);
      const first = silent.firstAt.map((t) => t!).sort((a, b) => a - b);
      // Two at a time: targets 3-4 start when 1-2 time out, 5-6 after 3-4.
      expect(first[1]! - first[0]!).toBeLessThan(150);
      expect(first[2]! - first[0]!).toBeGreaterThanOrEqual(350);
      expect(first[4]! - first[2]!).toBeGreaterThanOrEqual(350);

      const all = await silentAgents(6);
      try {
        await poll({
          type: 'snmp_poll',
          targets: all.ports.map((port) => ({ host, port })),
          oids: ['sysUpTime.0'],
          timeout: 0.4,
          retries: 0,
          max_concurrency: 6,
        });
        const f = all.firstAt.map((t) => t!).sort((a, b) => a - b);
        expect(f[5]! - f[0]!).toBeLessThan(300);
      } finally {
        await all.close();
      }
    } finally {
      await silent.close();
    }
  });

  it('a stopped run ends at once: the polls in flight are abandoned', async () => {
    const silent = await silentAgents(3);
    try {
      const config = loadPipeline({
        name: 'snmp-poll-stop',
        schedule: { type: 'manual' },
        source: { type: 'snmp_poll', targets: silent.ports.map((port) => ({ host, port })), oids: ['sysUpTime.0'], timeout: 5, retries: 0 },
        sinks: [{ type: 'local', path: tempDir('svc-snmp-poll-out-') }],
      });
      const stop = new AbortController();
      const t0 = performance.now();
      const running = runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), signal: stop.signal });
      await pace(300); // the stop comes while the run is under way
      stop.abort();
      const rec = await running;
      expect(performance.now() - t0).toBeLessThan(2000);
      expect(rec.status).toBe('aborted');
      expect(silent.counts).toEqual([1, 1, 1]);
    } finally {
      await silent.close();
    }
  });

  it('targets_file: host[:port] lines, or a YAML list of entries with their own community', async () => {
    const dir = tempDir('svc-snmp-poll-targets-');
    const text = join(dir, 'targets.txt');
    writeFileSync(text, `# lab agents\n${host}:${sim.port}\n\n  ${host}:${snmpd.port}  # snmpd\n`);
    const a = await poll({ type: 'snmp_poll', targets_file: text, oids: ['sysName.0'] });
    expect(a.rec.errors).toEqual([]);
    expect(a.records.map((r) => r._target).sort()).toEqual([`${host}:${sim.port}`, `${host}:${snmpd.port}`].sort());
    // The parse is kept while the file is unchanged; a rewritten file is read again, even at the same size.
    writeFileSync(text, `${host}:${sim.port}\n`);
    expect((await poll({ type: 'snmp_poll', targets_file: text, oids: ['sysName.0'] })).records.map((r) => r._target)).toEqual([`${host}:${sim.port}`]);
    writeFileSync(text, `${host}:${snmpd.port}\n`.padEnd(`${host}:${sim.port}\n`.length, ' '));
    if (String(snmpd.port).length <= String(sim.port).length)
      expect((await poll({ type: 'snmp_poll', targets_file: text, oids: ['sysName.0'] })).records.map((r) => r._target)).toEqual([`${host}:${snmpd.port}`]);
    const yaml = join(dir, 'targets.yaml');
    writeFileSync(yaml, `- {host: ${host}, port: ${sim.port}, community: other, name: o}\n- ${host}:${sim.port}\n`);
    const b = await poll({ type: 'snmp_poll', targets_file: yaml, oids: ['sysName.0'] });
    expect(b.records.map((r) => [r._target, r.sysName]).sort()).toEqual([
      [`${host}:${sim.port}`, 'sim1'],
      ['o', 'other-agent'],
    ]);
    const missing = await poll({ type: 'snmp_poll', targets_file: join(dir, 'nope.txt'), oids: ['sysName.0'] });
    expect(missing.rec.status).toBe('failed');
    expect(missing.rec.error).toMatch(/cannot read targets_file .*nope\.txt \(ENOENT\)/);
  });

  it('per-target SNMPv3 users override the top level', async () => {
    const [a, b] = SNMPD_USERS;
    const v3 = (u: typeof a) => ({
      host,
      port: snmpd.port,
      name: u!.name,
      version: '3',
      security_name: u!.name,
      auth_protocol: u!.auth_protocol,
      auth_key: u!.authKey,
      priv_protocol: u!.priv_protocol,
      priv_key: u!.privKey,
    });
    const { rec, records } = await poll({ type: 'snmp_poll', targets: [v3(a), v3(b), { host, port: sim.port, name: 'v2c' }], oids: ['sysUpTime.0'] });
    expect(rec.errors).toEqual([]);
    expect(records.map((r) => r._target).sort()).toEqual(['sha256aes192', 'shaaes', 'v2c']);
  });

  it('lint: exactly one of host, targets, targets_file; yield_rows needs walk', () => {
    expect(lintOf({ type: 'snmp_poll', oids: ['sysName.0'] })).toEqual(['host: set host (one agent), targets or targets_file']);
    expect(lintOf({ type: 'snmp_poll', host, targets: [{ host }], oids: ['sysName.0'] })).toEqual([
      'targets: set only one of host, targets, targets_file (got host, targets)',
    ]);
    expect(lintOf({ type: 'snmp_poll', host, oids: ['ifTable'], yield_rows: true })).toEqual([
      'yield_rows: yield_rows groups the rows of walked tables: set operation: walk',
    ]);
    expect(lintOf({ type: 'snmp_poll', targets: [{ host, version: '3' }], oids: ['sysName.0'] })).toEqual([
      'targets[0].security_name: an SNMPv3 target needs security_name',
    ]);
  });
});

describe('snmp_poll: MIBs', () => {
  it('mib_dirs adds a MIB module of our own (names, INDEX); mib_modules must be loaded', async () => {
    await sim.write({
      svcmib: snmprec([
        [SYS_UPTIME, 67, 1],
        ['1.3.6.1.4.1.99999.1.1.2.5', 2, 4],
        ['1.3.6.1.4.1.99999.1.1.3.5', 4, 'x'],
      ]),
    });
    const { rec, records } = await poll(
      simSource({ community: 'svcmib', operation: 'walk', oids: ['confTable'], yield_rows: true, mib_dirs: [sim.mibDir], mib_modules: ['SVC-CONF-MIB'] }),
    );
    expect(rec.errors).toEqual([]);
    expect(records).toEqual([{ _target: expect.any(String), _polled_at: expect.any(String), index: '5', confIndex: 5, seq: 4, body: 'x' }]);
    const without = await poll(simSource({ community: 'svcmib', operation: 'walk', oids: ['confTable'], yield_rows: true }));
    expect(without.rec.error).toMatch(/oids\[0\] "confTable" is neither a numeric OID nor a name known to the loaded MIBs/);
    const missing = await poll(simSource({ oids: ['sysName.0'], mib_modules: ['NO-SUCH-MIB'] }));
    expect(missing.rec.status).toBe('failed');
    expect(missing.rec.error).toMatch(/NO-SUCH-MIB not loaded/);
  });
});

conformance(snmpPollFixture);
