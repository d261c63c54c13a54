import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { TSchema } from '@sinclair/typebox';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';
import { clickhouseServer, type ClickhouseServer } from '../connectors/peers/clickhouse.js';
import { postgresDb } from '../connectors/peers/sql.js';
import { startVesCollector, VES_PASSWORD, VES_USER } from '../connectors/peers/ves-collector.js';
import { influxV2Peer, queryRecords } from '../connectors/peers/influxdb-v2.js';
import { receivedItems, startOtlpCollector } from '../connectors/peers/otlp.js';
import { startSearchPeer } from '../connectors/peers/elasticsearch.js';
import { kcatCollect, startMockCluster } from '../connectors/peers/kafka-mock.js';
import { snmprec, startSnmpsim } from '../connectors/peers/snmp-poll.js';
import { snmpinform } from '../connectors/peers/snmptrapd.js';
import { freeUdpPort } from '../snmp/peers.js';
import { until } from '../helpers/wait.js';
import { loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { dryRun } from '../../src/api/routes/pipelines.js';
import { BUNDLED_TEMPLATES, loadTemplates } from '../../src/pipelines/templates.js';
import { runTestFile } from '../../src/testing/run.js';
import { loadTestFile } from '../../src/testing/load.js';
import { combine, runCase } from '../../src/testing/harness.js';
import { runPipeline, type TransformStateIO } from '../../src/engine/runner.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../../src/observability/log.js';
import type { PipelineConfig } from '../../src/config/pipeline-schema.js';
import type { Rec } from '../../src/plugins/types.js';
import { registry } from '../../src/plugins/registry.js';
import { secretsOf } from '../../src/core/secrets.js';
import { mibIndex, resolveName } from '../../src/plugins/common/snmp.js';
import { storeMibs } from '../../src/mib/resolver.js';
import { loadSettings } from '../../src/settings.js';

/** The telecom templates of issue 17 (docs/templates.md), by the need each one answers. */
const TELECOM = [
  'snmp-interfaces-influxdb', // SNMP interface polling -> counter_delta -> InfluxDB
  'snmp-interfaces-clickhouse', // the same -> ClickHouse
  'snmp-traps-kafka', // SNMP traps -> Kafka, with MIB resolution
  'pm-xml-sftp-clickhouse', // 3GPP PM XML files over SFTP -> ClickHouse
  'pm-xml-prometheus-rw', // 3GPP PM XML files -> Prometheus remote write (issue 30)
  'syslog-opensearch', // syslog -> OpenSearch
  'gnmi-kafka', // gNMI -> Kafka
  'snmp-traps-ves-fault', // VES fault events from traps
  'kafka-alarms-sql-upsert', // Kafka -> SQL upsert
  'flow-clickhouse', // NetFlow/IPFIX/sFlow with interface names -> ClickHouse (issue 31)
  'flow-kafka', // flows -> Kafka
  'flow-top-talkers', // flows -> window_aggregate top talkers
  'snmp-interfaces-otlp', // SNMP interface counters -> OTLP metrics (issue 30)
  'syslog-otlp', // syslog -> OTLP logs (issue 30)
  'snmp-traps-otlp', // SNMP traps -> OTLP logs (issue 30)
];

describe('bundled templates', () => {
  it('are several, each described, and each a valid pipeline with its defaults', async () => {
    const templates = await loadTemplates();
    expect(templates.length).toBeGreaterThanOrEqual(12);
    for (const t of templates) {
      expect(t.description.length, t.name).toBeGreaterThan(10);
      const r = loadPipelineText(t.yaml, { env: {} });
      expect(
        r.diagnostics.map((d) => formatDiagnostic(d, t.name)),
        t.name,
      ).toEqual([]);
      expect(r.config!.name).toBe(t.name);
    }
  });

  it('include the telecom templates, each with a schedule that fits its source and a DLQ', async () => {
    const byName = new Map((await loadTemplates()).map((t) => [t.name, t]));
    expect(TELECOM.filter((n) => !byName.has(n))).toEqual([]);
    for (const name of TELECOM) {
      const config = loadPipelineText(byName.get(name)!.yaml, { env: {} }).config!;
      // Polls and file pickups run on an interval; traps, syslog, gNMI and Kafka are streams.
      const stream = ['snmp_trap', 'syslog', 'gnmi', 'kafka', 'flow'].includes(config.source.type);
      expect(config.schedule.type, name).toBe(stream ? 'stream' : 'interval');
      expect(config.on_error, name).toBe('dlq');
      expect(config.dlq, name).toBeDefined();
    }
  });

  it('dry-run clean: every transform, serializer, source and sink instantiates (as POST /api/pipelines/dry-run)', async () => {
    for (const t of await loadTemplates()) expect(dryRun(t.yaml, true), t.name).toEqual({ valid: true, issues: [], diagnostics: [] });
  });

  it('hold no literal secret: passwords, tokens and communities come from ${VAR:-default}', async () => {
    for (const t of await loadTemplates()) {
      const config = loadPipelineText(t.yaml, { env: {} }).config!;
      // The secrets of its components as svc masks them: writeOnly fields, secret-named fields, URL passwords.
      const secrets = new Set<string>();
      const components: (readonly ['source' | 'sink', { type: string }])[] = [
        ['source', config.source],
        ...config.sinks.map((s) => ['sink', s] as const),
        ...(config.dlq ? [['sink', config.dlq] as const] : []),
      ];
      for (const [kind, c] of components) secretsOf((registry[kind].get(c.type) as { config?: TSchema }).config, c, secrets);
      // None of them is written in the file other than as the default of a ${VAR:-default}.
      const literal = t.yaml.replace(/\$\{[^}]*\}/g, '');
      expect(
        [...secrets].filter((v) => literal.includes(v)),
        t.name,
      ).toEqual([]);
    }
  });

  it('name only SNMP objects and notifications the bundled MIBs know', async () => {
    let checked = 0;
    for (const t of await loadTemplates()) {
      const config = loadPipelineText(t.yaml, { env: {} }).config!;
      const src = config.source as { type: string; oids?: string[]; mib_dirs?: string[]; mib_modules?: string[] };
      if (src.type !== 'snmp_poll' && src.type !== 'snmp_trap') continue;
      // The modules the source requires load (a missing one stops the pipeline at start)...
      const ix = await mibIndex(
        src,
        storeMibs(() => loadSettings()),
      );
      // ...and every object polled, and every notification a transform maps, resolves.
      const names = [...(src.oids ?? []), ...t.yaml.matchAll(/"([A-Za-z0-9-]+::[A-Za-z0-9]+)"/g)].map((n) => (typeof n === 'string' ? n : n[1]!));
      for (const n of names) expect(resolveName(ix, src.mib_modules ?? [], n), `${t.name}: ${n}`).toMatch(/^1\.3\.6\.1\./);
      checked += names.length;
    }
    expect(checked).toBeGreaterThanOrEqual(12 * 2 + 5);
  }, 60_000);

  it('each have a `svc test` file beside them, and every case of it passes', async () => {
    const templates = await loadTemplates();
    for (const t of templates) {
      const file = join(BUNDLED_TEMPLATES, `${t.name}.test.yaml`);
      expect(existsSync(file), `${t.name} has no ${t.name}.test.yaml`).toBe(true);
      const r = await runTestFile(file);
      expect(r.invalid, t.name).toBeUndefined();
      expect(r.warnings, t.name).toEqual([]);
      expect(r.cases.length, t.name).toBeGreaterThan(0);
      expect(
        r.cases.filter((c) => !c.ok).map((c) => ({ name: c.name, failures: c.failures })),
        t.name,
      ).toEqual([]);
    }
  });

  it('never list a `svc test` file as a template', async () => {
    const names = (await loadTemplates()).map((t) => t.name);
    expect(names.filter((n) => /\.test$/i.test(n))).toEqual([]);
    const dir = tempDir();
    writeFileSync(join(dir, 'mine.yaml'), 'version: "1"\npipeline:\n  name: mine\n  description: my own template\n');
    writeFileSync(join(dir, 'mine.test.yaml'), 'cases: []\n');
    writeFileSync(join(dir, 'other.TEST.yml'), 'cases: []\n');
    expect((await loadTemplates(dir)).map((t) => t.name)).toEqual(['mine']);
  });

  it('reads another directory when SVC_TEMPLATES_DIR names one, and an empty list for a missing one', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'mine.yaml'), 'version: "1"\npipeline:\n  name: mine\n  description: my own template\n');
    writeFileSync(join(dir, 'broken.yml'), 'pipeline: [unclosed\n');
    writeFileSync(join(dir, 'notes.txt'), 'not a template');
    expect(await loadTemplates(dir)).toEqual([
      { name: 'broken', description: '(this template is not valid YAML)', yaml: 'pipeline: [unclosed\n' },
      { name: 'mine', description: 'my own template', yaml: 'version: "1"\npipeline:\n  name: mine\n  description: my own template\n' },
    ]);
    expect(await loadTemplates('/nonexistent-dir')).toEqual([]);
  });
});

/** What sinks[0] of a template receives over every case of its `svc test` file. */
async function testOutputs(name: string): Promise<Rec[]> {
  const loaded = loadTestFile(join(BUNDLED_TEMPLATES, `${name}.test.yaml`));
  if (!loaded.ok) throw new Error(`${name}.test.yaml is invalid`);
  const out: Rec[] = [];
  for (const c of loaded.suite.cases) out.push(...combine(await runCase(loaded.suite.config, c)).sinks[0]!.records);
  return out;
}

/**
 * Writes `records` through the template's own sinks[0] (its YAML with `env`, `patch` on top) in a
 * real run: the records are read back from an NDJSON file, with no transform, into the real sink.
 */
async function writeThroughTemplateSink(name: string, env: Record<string, string>, records: Rec[], patch: Record<string, unknown> = {}) {
  const r = loadPipelineText(readFileSync(join(BUNDLED_TEMPLATES, `${name}.yaml`), 'utf8'), { env });
  expect(r.diagnostics.map((d) => formatDiagnostic(d, name))).toEqual([]);
  const dir = tempDir();
  writeFileSync(join(dir, 'outputs.ndjson'), records.map((x) => JSON.stringify(x)).join('\n') + '\n');
  const config: PipelineConfig = {
    ...r.config!,
    schedule: { type: 'manual' },
    source: { type: 'local', path: dir, file_pattern: '*.ndjson' },
    serializer_in: { type: 'ndjson' },
    transforms: [],
    sinks: [{ ...r.config!.sinks[0]!, retry_count: 0, ...patch }],
    on_error: 'abort',
    dlq: undefined,
  } as PipelineConfig;
  return runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles() });
}

/** The CREATE TABLE statement(s) in a template's comments, as an operator would copy them. */
function ddlOf(name: string): string[] {
  const yaml = readFileSync(join(BUNDLED_TEMPLATES, `${name}.yaml`), 'utf8');
  const lines = yaml
    .split('\n')
    .filter((l) => /^\s*#\s{3}/.test(l))
    .map((l) => l.replace(/^\s*#\s{3}/, ''));
  return lines
    .join('\n')
    .split(';')
    .map((x) => x.trim())
    .filter((x) => x.startsWith('CREATE TABLE'));
}

describe('what the templates write, against real peers', () => {
  describe('ClickHouse (clickhouse-server 18.16): the tables the templates document take their rows', () => {
    let ch: ClickhouseServer;
    beforeAll(async () => {
      ch = await clickhouseServer();
      await ch.exec('CREATE DATABASE nms');
    }, 120_000);
    afterAll(async () => {
      await ch?.stop();
    }, 60_000);

    const env = () => ({ CLICKHOUSE_HOST: '127.0.0.1', CLICKHOUSE_DATABASE: 'nms' });

    it('snmp-interfaces-clickhouse: if_rates from its comment, with the rates and times of its test cases', async () => {
      for (const sql of ddlOf('snmp-interfaces-clickhouse')) await ch.exec(sql);
      const rows = await testOutputs('snmp-interfaces-clickhouse');
      expect(rows.length).toBe(4);
      const run = await writeThroughTemplateSink('snmp-interfaces-clickhouse', env(), rows, { http_port: ch.httpPort });
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      const back = await ch.rows<{ t: number; if_index: number; in_bps: number | null; out_util_pct: number | null }>(
        'SELECT toUnixTimestamp(time) AS t, if_index, in_bps, out_util_pct FROM nms.if_rates ORDER BY if_index, in_bps',
      );
      // 10:01:00 UTC, the second poll's time.
      expect(back.map((x) => [x.t, x.if_index, x.in_bps, x.out_util_pct])).toEqual([
        [1795687260, 1, 10000000, 0.2],
        [1795687260, 1, 500000000, 10],
        [1795687260, 2, null, 0.8],
        [1795687260, 3, 80, 0],
      ]);
    });

    it('flow-clickhouse: flows from its comment, one row per flow, IPv4 and IPv6 in one column, absent fields at their defaults', async () => {
      for (const sql of ddlOf('flow-clickhouse')) await ch.exec(sql);
      const rows = await testOutputs('flow-clickhouse');
      expect(rows.length).toBe(3);
      const run = await writeThroughTemplateSink('flow-clickhouse', env(), rows, { http_port: ch.httpPort });
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      const back = await ch.rows<Record<string, string | number>>(
        'SELECT toUnixTimestamp(time) AS t, duration_ms, src_addr, dst_port, bytes, sampling_interval, in_if_name, out_if_alias, src_as FROM nms.flows ORDER BY src_addr',
      );
      expect(back.map((x) => [x.src_addr, x.dst_port, String(x.bytes), x.sampling_interval, x.in_if_name, x.out_if_alias, x.src_as])).toEqual([
        ['10.1.0.7', 443, '1500000', 1, 'ge-0/0/1', 'customer ACME', 0],
        ['10.2.0.1', 40000, '12000', 100, '', '', 64500],
        ['2001:db8::1', 0, '51200', 512, '', '', 0],
      ]);
      expect(back[0]).toMatchObject({ t: 1795687259, duration_ms: 59500 });
      // The query the table is sorted for: one exporter, a time range, the biggest sources.
      expect(
        await ch.rows(
          "SELECT src_addr, sum(bytes) AS b FROM nms.flows WHERE exporter = '192.0.2.1' AND time >= toDateTime(1795687200) GROUP BY src_addr ORDER BY b DESC",
        ),
      ).toEqual([{ src_addr: '10.1.0.7', b: '1500000' }]);
    });

    it('pm-xml-sftp-clickhouse: pm_counters from its comment, one row per counter of the PM file', async () => {
      for (const sql of ddlOf('pm-xml-sftp-clickhouse')) await ch.exec(sql);
      const rows = await testOutputs('pm-xml-sftp-clickhouse');
      const run = await writeThroughTemplateSink('pm-xml-sftp-clickhouse', env(), rows, { http_port: ch.httpPort });
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      const back = await ch.rows<{ end: number; counter: string; value: number; suspect: number }>(
        "SELECT toUnixTimestamp(gran_end_time) AS end, counter, value, suspect FROM nms.pm_counters WHERE meas_obj_ldn LIKE '%NRCellCU=2' ORDER BY counter",
      );
      expect(back).toEqual([
        { end: 1795684500, counter: 'RRC.ConnEstabAtt.sum', value: 880, suspect: 1 },
        { end: 1795684500, counter: 'RRC.ConnMean', value: 12, suspect: 1 },
      ]);
      expect(await ch.rows('SELECT count() AS n FROM nms.pm_counters')).toEqual([{ n: String(rows.length) }]);
    });
  });

  it('snmp-interfaces-otlp, syslog-otlp and snmp-traps-otlp: counters as cumulative monotonic Sums, status as a Gauge, syslog and traps as LogRecords at the test collector', async () => {
    const col = await startOtlpCollector();
    try {
      const env = { OTLP_ENDPOINT: col.httpUrl };
      const m = await writeThroughTemplateSink('snmp-interfaces-otlp', env, await testOutputs('snmp-interfaces-otlp'));
      expect(m.errors).toEqual([]);
      const points = receivedItems(col, 'metrics');
      const octets = points.find((p) => p.metric!.name === 'ifHCInOctets' && p.attributes.ifIndex === 1)!;
      expect(octets.metric!.sum).toMatchObject({ is_monotonic: true, aggregation_temporality: 2 });
      expect(octets.attributes).toEqual({ ifIndex: 1, ifName: 'Gi0/1', ifAlias: 'uplink' });
      expect(octets.resource).toEqual({ 'service.name': 'svc-snmp', 'host.name': 'core1.example.net', 'svc.target': 'core1' });
      expect(points.find((p) => p.metric!.name === 'ifOperStatus' && p.attributes.ifIndex === 2)!.metric!.gauge).toBeDefined();
      const l = await writeThroughTemplateSink('syslog-otlp', env, await testOutputs('syslog-otlp'));
      expect(l.errors).toEqual([]);
      const logs = receivedItems(col, 'logs');
      expect(logs).toHaveLength(1);
      expect(logs[0]!.item).toMatchObject({
        severity_number: 17,
        severity_text: 'ERROR',
        body: { string_value: '%LINK-3-UPDOWN: Interface GigabitEthernet0/1, changed state to down' },
      });
      expect(logs[0]!.resource).toEqual({ 'service.name': 'svc-syslog', 'host.name': 'rtr1' });
      const t = await writeThroughTemplateSink('snmp-traps-otlp', env, await testOutputs('snmp-traps-otlp'));
      expect(t.errors).toEqual([]);
      // Both traps the test file's cases send on (linkDown, linkUp): the bare name as the body, the agent as host.name.
      const traps = receivedItems(col, 'logs').slice(1);
      expect(traps.map((x) => x.item.body)).toEqual([{ string_value: 'linkDown' }, { string_value: 'linkUp' }]);
      for (const x of traps) expect(x.resource).toEqual({ 'service.name': 'svc-snmp-traps', 'host.name': '192.0.2.10' });
      expect(traps[0]!.attributes).toMatchObject({ trap_oid: '1.3.6.1.6.3.1.1.5.3', trap_name: 'IF-MIB::linkDown', ifIndex: 3 });
      expect(traps[0]!.attributes).not.toHaveProperty('community');
    } finally {
      await col.stop();
    }
  });

  it('snmp-interfaces-influxdb: points tagged by device and interface, rates always floats (no field type conflict)', async () => {
    const peer = await influxV2Peer({ org: 'noc', buckets: ['telemetry'] });
    try {
      const rows = await testOutputs('snmp-interfaces-influxdb');
      const env = { INFLUX_URL: peer.url, INFLUX_TOKEN: peer.token };
      const run = await writeThroughTemplateSink('snmp-interfaces-influxdb', env, rows);
      // Gi0/1 writes in_errors_ps 2 and Gi0/2 0.25 in one batch: without float_fields the first makes
      // the field an integer and the server drops the second point (a 422 partial write).
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      const points = await queryRecords(peer, 'interface', 'telemetry');
      const byIf = (i: string, bps: number) => points.find((p) => p.if_index === i && p.in_bps === bps);
      expect(byIf('1', 500000000)).toMatchObject({
        device: 'core1',
        if_name: 'Gi0/1',
        if_alias: 'uplink to core1',
        _time: '2026-11-26T10:01:00Z',
        in_errors_ps: 2,
        in_util_pct: 50,
      });
      expect(points.find((p) => p.if_index === '2')).toMatchObject({ device: 'core1', in_errors_ps: 0.25, out_util_pct: 0.8 });
      // An empty ifAlias is no tag, and a null in_bps (a reset) no field.
      expect(points.find((p) => p.if_index === '2')).not.toHaveProperty('if_alias');
      expect(points.find((p) => p.if_index === '2')?.in_bps ?? null).toBeNull();
    } finally {
      await peer.stop();
    }
  });

  it('syslog-opensearch: documents land in the daily index of their own time', async () => {
    const peer = await startSearchPeer({ flavor: 'opensearch', users: { svc_writer: 'writer-secret' } });
    try {
      const rows = await testOutputs('syslog-opensearch');
      const env = { OPENSEARCH_URL: peer.url, OPENSEARCH_PASSWORD: 'writer-secret' };
      const run = await writeThroughTemplateSink('syslog-opensearch', env, rows);
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      const day = peer.documents('syslog-2026.11.26').map((d) => d._source);
      expect(day.map((d) => [d.hostname, d['@timestamp']])).toEqual([
        ['rtr1', '2026-11-26T09:00:00.000Z'],
        ['bng1', '2026-11-26T10:00:00.123Z'],
      ]);
      expect(day[0]).toMatchObject({ event_mnemonic: 'UPDOWN', interface: 'GigabitEthernet0/1', severity: 3 });
      // The message without a time of its own is in the index of the day it was processed.
      const today = peer.indices().filter((i) => i !== 'syslog-2026.11.26');
      expect(today.length === 0 || today.every((i) => /^syslog-\d{4}\.\d\d\.\d\d$/.test(i))).toBe(true);
      expect(peer.indices().flatMap((i) => peer.documents(i)).length).toBe(rows.length);
    } finally {
      await peer.close();
    }
  });

  it('snmp-interfaces-influxdb, whole: two runs polling snmpsimd (IF-MIB columns, a 64-bit and a 32-bit wrap) -> rates in InfluxDB', async () => {
    // ifTable (1.3.6.1.2.1.2.2.1) and ifXTable (1.3.6.1.2.1.31.1.1.1) columns of two interfaces.
    const IF = '1.3.6.1.2.1.2.2.1';
    const IFX = '1.3.6.1.2.1.31.1.1.1';
    type Sample = { name: string; alias: string; speed: number; oper: number; hcIn: string; hcOut: string; inPk: number; outPk: number; inErr: number };
    const agent = (ifs: Sample[]) =>
      snmprec([
        ['1.3.6.1.2.1.1.3.0', 67, 4242],
        ...ifs.flatMap((x, i): [string, number, string | number][] => [
          [`${IF}.8.${i + 1}`, 2, x.oper],
          [`${IF}.13.${i + 1}`, 65, 0],
          [`${IF}.14.${i + 1}`, 65, x.inErr],
          [`${IF}.19.${i + 1}`, 65, 0],
          [`${IF}.20.${i + 1}`, 65, 0],
          [`${IFX}.1.${i + 1}`, 4, x.name],
          [`${IFX}.6.${i + 1}`, 70, x.hcIn],
          [`${IFX}.7.${i + 1}`, 70, x.inPk],
          [`${IFX}.10.${i + 1}`, 70, x.hcOut],
          [`${IFX}.11.${i + 1}`, 70, x.outPk],
          [`${IFX}.15.${i + 1}`, 66, x.speed],
          [`${IFX}.18.${i + 1}`, 4, x.alias],
        ]),
      ]);
    const sim = await startSnmpsim({
      tpl: agent([
        {
          name: 'Gi0/1',
          alias: 'uplink to core1',
          speed: 1000,
          oper: 1,
          hcIn: '18446744073709551000',
          hcOut: '5000000000',
          inPk: 1000,
          outPk: 2000,
          inErr: 10,
        },
        { name: 'Gi0/2', alias: 'spare', speed: 10000, oper: 2, hcIn: '100', hcOut: '200', inPk: 0, outPk: 0, inErr: 4294967290 },
      ]),
    });
    const influx = await influxV2Peer({ org: 'noc', buckets: ['telemetry'] });
    try {
      const yaml = readFileSync(join(BUNDLED_TEMPLATES, 'snmp-interfaces-influxdb.yaml'), 'utf8');
      const env = { SNMP_HOST: '127.0.0.1', SNMP_COMMUNITY: 'tpl', INFLUX_URL: influx.url, INFLUX_TOKEN: influx.token };
      const loaded = loadPipelineText(yaml, { env });
      expect(loaded.diagnostics).toEqual([]);
      const config = { ...loaded.config!, source: { ...loaded.config!.source, port: sim.port } } as PipelineConfig;
      // The durable state a daemon keeps between runs, in memory.
      let saved: Record<string, unknown> | null = null;
      const state: TransformStateIO = { load: async () => saved, save: async (s) => void (saved = s) };
      const run = () => runPipeline(config, { log: silentLogger, processed: new MemoryProcessedFiles(), state });

      const first = await run();
      expect(first.errors).toEqual([]);
      expect([first.status, first.records_in, first.records_out]).toEqual(['success', 2, 0]);

      // Gi0/1: ifHCInOctets past 2^64 (3.75e9 octets), ifHCOutOctets +7.5e8. Gi0/2: ifInErrors past 2^32 (15), ifHCInOctets +1000.
      await sim.write({
        tpl: agent([
          { name: 'Gi0/1', alias: 'uplink to core1', speed: 1000, oper: 1, hcIn: '3749999384', hcOut: '5750000000', inPk: 61000, outPk: 2000, inErr: 10 },
          { name: 'Gi0/2', alias: 'spare', speed: 10000, oper: 2, hcIn: '1100', hcOut: '200', inPk: 0, outPk: 0, inErr: 9 },
        ]),
      });
      const second = await run();
      expect(second.errors).toEqual([]);
      expect([second.status, second.records_in, second.records_out]).toEqual(['success', 2, 2]);

      const points = await queryRecords(influx, 'interface', 'telemetry');
      const gi1 = points.find((x) => x.if_name === 'Gi0/1')!;
      const gi2 = points.find((x) => x.if_name === 'Gi0/2')!;
      expect(gi1).toMatchObject({ device: `127.0.0.1:${sim.port}`, if_index: '1', if_alias: 'uplink to core1', oper_status: 1, speed_mbps: 1000 });
      expect(gi2).toMatchObject({ device: `127.0.0.1:${sim.port}`, if_index: '2', if_alias: 'spare', oper_status: 2, out_bps: 0 });
      // The seconds between the runs are the machine's; the ratios of the rates are the deltas'.
      expect(gi1.in_bps as number).toBeGreaterThan(0);
      expect((gi1.in_bps as number) / (gi1.out_bps as number)).toBeCloseTo(3.75e9 / 7.5e8, 9);
      expect(((gi1.in_ucast_pps as number) * 8) / (gi1.in_bps as number)).toBeCloseTo(60000 / 3.75e9, 12);
      expect(((gi2.in_errors_ps as number) * 8) / (gi2.in_bps as number)).toBeCloseTo(15 / 1000, 9);
    } finally {
      await influx.stop();
      await sim.stop();
    }
  }, 60_000);

  describe('Kafka (librdkafka mock cluster): messages keyed as the templates say', () => {
    let cluster: Awaited<ReturnType<typeof startMockCluster>>;
    beforeAll(async () => {
      cluster = await startMockCluster(1);
    }, 60_000);
    afterAll(async () => {
      await cluster?.stop();
    }, 30_000);

    const publishAndRead = async (name: string, topicVar: string, topic: string) => {
      const rows = await testOutputs(name);
      const run = await writeThroughTemplateSink(name, { KAFKA_BROKER: cluster.brokers[0]!, [topicVar]: topic }, rows);
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      const reader = kcatCollect(cluster.brokers, topic);
      try {
        return await until(() => (reader.messages().length >= rows.length ? [...reader.messages()] : undefined), 20_000);
      } finally {
        await reader.close();
      }
    };

    it('snmp-traps-kafka: one JSON message per trap, keyed by the agent address', async () => {
      const got = await publishAndRead('snmp-traps-kafka', 'TRAP_TOPIC', 'tpl.snmp.traps');
      expect(got.map((m) => [m.key, (JSON.parse(m.value) as Rec).trap]).sort()).toEqual([
        ['192.0.2.10', 'linkDown'],
        ['192.0.2.11', 'warmStart'],
        ['198.51.100.7', '1.3.6.1.4.1.99999.0.7'],
      ]);
      // The Counter64 keeps every digit on the wire too.
      expect(got.find((m) => m.key === '198.51.100.7')!.value).toContain('"18446744073709551615"');
    });

    it('flow-kafka: one JSON message per flow, keyed by exporter, a 64-bit count exact', async () => {
      const got = await publishAndRead('flow-kafka', 'FLOW_TOPIC', 'tpl.flows');
      expect(got.map((m) => [m.key, (JSON.parse(m.value) as Rec).in_if_name ?? null]).sort()).toEqual([
        ['192.0.2.1', 'ge-0/0/1'],
        ['192.0.2.9', null],
      ]);
      expect(got.find((m) => m.key === '192.0.2.9')!.value).toContain('"18446744073709551615"');
    });

    it('gnmi-kafka: one JSON message per update, keyed by device|interface', async () => {
      const got = await publishAndRead('gnmi-kafka', 'GNMI_TOPIC', 'tpl.gnmi');
      expect(got.map((m) => m.key).sort()).toEqual(['rtr1|Ethernet1', 'rtr1|Ethernet1', 'rtr1|Ethernet2', 'rtr1|Ethernet9', 'rtr2|et-0/0/1']);
      // One interface, one partition: its updates stay in order.
      const eth1 = got.filter((m) => m.key === 'rtr1|Ethernet1');
      expect(new Set(eth1.map((m) => m.partition)).size).toBe(1);
    });
  });

  it('snmp-traps-ves-fault: the fault records become VES 7.1 events the collector validates against the published schema', async () => {
    const collector = await startVesCollector({ auth: { type: 'basic', username: VES_USER, password: VES_PASSWORD } });
    try {
      const rows = await testOutputs('snmp-traps-ves-fault');
      const env = { VES_COLLECTOR_URL: collector.url, VES_USER, VES_PASSWORD };
      const run = await writeThroughTemplateSink('snmp-traps-ves-fault', env, rows);
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      // The collector answered 202 only to schema-valid bodies.
      expect(collector.requests.map((q) => q.status)).toEqual(collector.requests.map(() => 202));
      const faults = collector.eventsOf('svc-trap-relay').map((e) => ({ h: e.commonEventHeader, f: e.faultFields as Rec }));
      expect(faults.map(({ h, f }) => [h.sourceName, h.eventName, f.alarmCondition, f.eventSeverity, f.vfStatus, f.alarmInterfaceA ?? null])).toEqual([
        ['192.0.2.10', 'Fault_svc_linkDown', 'linkDown', 'MAJOR', 'Active', 'Gi0/3'],
        ['192.0.2.10', 'Fault_svc_linkDown', 'linkDown', 'NORMAL', 'Idle', 'ifIndex 3'],
        ['192.0.2.20', 'Fault_svc_coldStart', 'coldStart', 'MAJOR', 'Active', null],
      ]);
      // startEpochMicrosec is the time the trap was received; the varbinds are additional information.
      expect(faults[0]!.h.startEpochMicrosec).toBe(Date.parse('2026-11-26T10:04:05.120Z') * 1000);
      expect(faults[0]!.f.alarmAdditionalInformation).toMatchObject({ ifIndex: '3', ifOperStatus: '2', trap_oid: '1.3.6.1.6.3.1.1.5.3' });
    } finally {
      await collector.close();
    }
  });

  it('snmp-traps-ves-fault, whole: informs from net-snmp, named through the MIBs, reach the collector as faults; an unmapped one the DLQ', async () => {
    const collector = await startVesCollector({ auth: { type: 'basic', username: VES_USER, password: VES_PASSWORD } });
    const dataDir = tempDir();
    try {
      const port = await freeUdpPort();
      const env = { TRAP_LISTEN_ADDRESS: '127.0.0.1', VES_COLLECTOR_URL: collector.url, VES_USER, VES_PASSWORD, DATA_DIR: dataDir };
      const loaded = loadPipelineText(readFileSync(join(BUNDLED_TEMPLATES, 'snmp-traps-ves-fault.yaml'), 'utf8'), { env });
      expect(loaded.diagnostics).toEqual([]);
      const config = { ...loaded.config!, source: { ...loaded.config!.source, port } } as PipelineConfig;
      const stop = new AbortController();
      let progress: { records_out: number; dlq_count: number } = { records_out: 0, dlq_count: 0 };
      const running = runPipeline(config, { log: silentLogger, signal: stop.signal, onProgress: (p) => void (progress = p) });
      // An inform is acknowledged by the receiver: once one is, the source listens.
      const linkDown: [string, string, string][] = [
        ['1.3.6.1.2.1.2.2.1.1.3', 'i', '3'],
        ['1.3.6.1.2.1.2.2.1.7.3', 'i', '1'],
        ['1.3.6.1.2.1.2.2.1.8.3', 'i', '2'],
        ['1.3.6.1.2.1.31.1.1.1.1.3', 's', 'Gi0/3'],
      ];
      await until(
        () =>
          snmpinform(port, { version: '2c', community: 'public' }, '1.3.6.1.6.3.1.1.5.3', linkDown).then(
            () => true,
            () => false,
          ),
        20_000,
      );
      await snmpinform(port, { version: '2c', community: 'public' }, '1.3.6.1.4.1.99999.0.1', [['1.3.6.1.4.1.99999.1.1.0', 's', 'fan tray 2 failed']]);
      // Both delivered (one event, one dead letter) before the stream is stopped.
      await until(() => (progress.records_out >= 1 && progress.dlq_count >= 1) || undefined, 20_000);
      stop.abort();
      const run = await running;
      expect(run.status).toBe('success');
      // (The linkDown may have been sent twice, when the first inform's answer was slower than its retry.)
      expect(run.dlq_count).toBe(1);
      expect(run.records_out).toBe(run.records_in - 1);
      const [event] = collector.eventsOf('svc-trap-relay');
      expect(event!.commonEventHeader).toMatchObject({
        domain: 'fault',
        sourceName: '127.0.0.1',
        eventName: 'Fault_svc_linkDown',
        reportingEntityName: 'svc-trap-relay',
      });
      expect(event!.faultFields).toMatchObject({
        alarmCondition: 'linkDown',
        eventSeverity: 'MAJOR',
        specificProblem: 'Link down on Gi0/3',
        alarmInterfaceA: 'Gi0/3',
        eventSourceType: 'router',
        vfStatus: 'Active',
        alarmAdditionalInformation: { ifIndex: '3', ifAdminStatus: '1', ifOperStatus: '2', trap_oid: '1.3.6.1.6.3.1.1.5.3' },
      });
      // The enterprise trap no mapping knows is a dead letter, with its name as the MIBs give it.
      const dlqDir = join(dataDir, 'dlq', 'snmp-traps-ves-fault');
      const letters = readdirSync(dlqDir).flatMap((f) =>
        readFileSync(join(dlqDir, f), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Rec),
      );
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ _stage: 'transform', record: { trap_oid: '1.3.6.1.4.1.99999.0.1', eventSeverity: null } });
      expect(String(letters[0]!._error)).toContain('eventSeverity');
    } finally {
      await collector.close();
    }
  }, 60_000);

  it('kafka-alarms-sql-upsert: the table of its comment in PostgreSQL holds the latest state of each alarm', async () => {
    const db = await postgresDb();
    try {
      for (const sql of ddlOf('kafka-alarms-sql-upsert')) await db.exec(sql);
      const rows = await testOutputs('kafka-alarms-sql-upsert');
      // The connection URL of the template itself, with its default (empty) password: local
      // connections are trusted here.
      const env = { PG_USER: 'postgres', PG_HOST: '127.0.0.1', PG_DATABASE: new URL(db.url).pathname.slice(1) };
      const run = await writeThroughTemplateSink('kafka-alarms-sql-upsert', env, rows);
      expect(run.errors).toEqual([]);
      expect(run.status).toBe('success');
      const back = await db.exec(
        "SELECT alarm_id, severity, specific_problem, state, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS at FROM alarms_current ORDER BY alarm_id",
      );
      // The raise and its clear are one row: the clear's.
      expect(back).toEqual([
        { alarm_id: 'gNB-Paris-01/RU-2/1042', severity: 'cleared', specific_problem: null, state: 'cleared', at: '2026-11-26 09:07:30' },
        { alarm_id: 'olt7/0-1-3/78', severity: 'critical', specific_problem: null, state: 'raised', at: '2026-11-26 10:00:01' },
      ]);
    } finally {
      await db.stop();
    }
  });
});
