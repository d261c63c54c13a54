// Round trip with a real agent: snmp_poll of Debian's snmpd (IF-MIB) -> otlp sink -> otlp source ->
// NDJSON. The interfaces come back with the same counters, as cumulative monotonic Sums (their
// Counter32 type read from the agent by classify), and ifOperStatus as a Gauge of the same value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/engine/runner.js';
import { silentLogger } from '../../src/observability/log.js';
import { MemoryProcessedFiles } from '../../src/plugins/connector-runtime/processed-files.js';
import { tempDir } from '../helpers/fs.js';
import { loadPipeline, outputRecords, until, type Rec } from './helpers.js';
import { startOtlpToFile } from './peers/otlp.js';
import { startSnmpdV3, type Snmpd } from './peers/snmp-poll.js';

let snmpd: Snmpd;
beforeAll(async () => {
  snmpd = await startSnmpdV3();
}, 60_000);
afterAll(async () => {
  await snmpd?.stop();
});

const poll = (port: number) => ({
  type: 'snmp_poll',
  host: '127.0.0.1',
  port,
  community: 'public',
  version: '2c',
  operation: 'walk',
  oids: ['IF-MIB::ifDescr', 'IF-MIB::ifOperStatus', 'IF-MIB::ifInOctets', 'IF-MIB::ifOutOctets'],
  yield_rows: true,
  classify: true,
});

describe('snmp_poll (snmpd) -> otlp sink -> otlp source', () => {
  it('gives back the same counters as Sums and the status as a Gauge', async () => {
    // What snmp_poll reads, directly.
    const direct = tempDir('svc-otlp-snmp-direct-');
    await runPipeline(
      loadPipeline({
        name: 'snmp-direct',
        schedule: { type: 'manual' },
        source: poll(snmpd.port),
        serializer_in: { type: 'json' },
        serializer_out: { type: 'ndjson' },
        sinks: [{ type: 'local', path: direct, filename_template: 'out.ndjson' }],
      }),
      { log: silentLogger, processed: new MemoryProcessedFiles() },
    );
    const rows = outputRecords(direct);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows[0]!._snmp_widths).toMatchObject({ ifInOctets: 32, ifOutOctets: 32 });

    const { port, out, stop } = await startOtlpToFile('otlp-snmp-in', tempDir('svc-otlp-snmp-in-'));
    try {
      await until(
        async () => {
          const r = await runPipeline(
            loadPipeline({
              name: 'snmp-otlp',
              schedule: { type: 'manual' },
              source: poll(snmpd.port),
              serializer_in: { type: 'json' },
              serializer_out: { type: 'json' },
              sinks: [
                {
                  type: 'otlp',
                  endpoint: `http://127.0.0.1:${port}`,
                  protocol: 'grpc',
                  value_fields: ['ifInOctets', 'ifOutOctets', 'ifOperStatus'],
                  attribute_fields: ['ifIndex', 'ifDescr'],
                  retry_count: 0,
                },
              ],
            }),
            { log: silentLogger, processed: new MemoryProcessedFiles() },
          );
          return r.status === 'success';
        },
        30_000,
        'the poll sent',
      );
      await until(() => outputRecords(out).length >= rows.length * 3, 20_000, 'every interface back');
      const back = outputRecords(out);
      for (const row of rows) {
        const of = (name: string) => back.find((r) => r.name === name && r.ifIndex === row.ifIndex) as Rec;
        for (const c of ['ifInOctets', 'ifOutOctets']) {
          expect(of(c), `${c} of ${row.ifDescr}`).toMatchObject({
            type: 'sum',
            monotonic: true,
            temporality: 'cumulative',
            ifDescr: row.ifDescr,
            'resource.svc.target': row._target,
          });
          // A live agent's counters move between the two polls, never back.
          expect(Number(of(c).value)).toBeGreaterThanOrEqual(Number(row[c]));
          expect(of(c).start_time_unix_nano).toBe(of(c).time_unix_nano); // the series' first point
        }
        expect(of('ifOperStatus')).toMatchObject({ type: 'gauge', value: row.ifOperStatus });
      }
    } finally {
      await stop();
    }
  }, 120_000);
});
