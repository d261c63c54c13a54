// The four pipelines of the soak, written into the daemon's pipeline directory before it starts.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INFLUX_DB, SQL_TABLE, TRAP_TOPIC } from './peers.js';

export interface PipelinePorts {
  syslogPort: number;
  trapPort: number;
  ndjsonDir: string;
  kafkaBrokers: string[];
  pgUrl: string;
  influxUrl: string;
  agentPorts: number[];
  pollSeconds: number;
}

export const PIPELINES = { syslog: 'soak-syslog', traps: 'soak-traps', webhook: 'soak-webhook', poll: 'soak-poll' } as const;
export const WEBHOOK_PATH = 'soak';
export const POLL_MEASUREMENT = 'poll';

export function pipelineFiles(p: PipelinePorts): Record<string, string> {
  const head = (name: string, schedule: string) => `version: "1"\npipeline:\n  name: ${name}\n  schedule: ${schedule}\n`;
  return {
    // UDP receive buffer at the usual rmem_max (4 MiB): bursts are absorbed, not dropped.
    [PIPELINES.syslog]:
      head(PIPELINES.syslog, '{ type: stream }') +
      `  source: { type: syslog, host: 127.0.0.1, port: ${p.syslogPort}, protocol: udp, buffer_size: 4194304 }
  serializer_out: { type: ndjson }
  sinks:
    - { type: local, path: ${JSON.stringify(p.ndjsonDir)}, filename_template: "syslog_{timestamp}_{part}.ndjson", max_records: 200000 }
`,
    [PIPELINES.traps]:
      head(PIPELINES.traps, '{ type: stream }') +
      `  source: { type: snmp_trap, host: 127.0.0.1, port: ${p.trapPort}, community: public, version: 2c }
  sinks:
    - { type: kafka, brokers: ${JSON.stringify(p.kafkaBrokers)}, topic: ${TRAP_TOPIC}, retry_count: 5 }
`,
    [PIPELINES.webhook]:
      head(PIPELINES.webhook, '{ type: stream }') +
      `  source: { type: webhook, path: ${WEBHOOK_PATH}, max_queue_size: 5000 }
  sinks:
    - { type: sql, connection_url: ${JSON.stringify(p.pgUrl)}, table: ${SQL_TABLE}, retry_count: 5 }
`,
    // emit_first: every sample reaches InfluxDB (the first of a series without deltas), so the
    // points are exactly the rows polled. A point is (target, ifIndex, poll time in ms).
    [PIPELINES.poll]:
      head(PIPELINES.poll, `{ type: interval, interval_seconds: ${p.pollSeconds} }`) +
      `  source:
    type: snmp_poll
    targets: [${p.agentPorts.map((port) => `{ host: 127.0.0.1, port: ${port} }`).join(', ')}]
    operation: walk
    oids: [IF-MIB::ifHCInOctets, IF-MIB::ifHCOutOctets]
    yield_rows: true
    classify: true
  transforms:
    - { type: counter_delta, key_fields: [_target, ifIndex], counters: [ifHCInOctets, ifHCOutOctets], time_field: _polled_at, rate: true, emit_first: true }
    - { type: project, fields: [_target, _polled_at, ifIndex, ifHCInOctets, ifHCOutOctets, ifHCInOctets_delta, ifHCOutOctets_delta, ifHCInOctets_rate, ifHCOutOctets_rate] }
  sinks:
    - { type: influxdb, api: v1, url: ${JSON.stringify(p.influxUrl)}, token: "soak:unused", org: unused, bucket: ${INFLUX_DB}, measurement: ${POLL_MEASUREMENT}, tag_fields: [_target, ifIndex], timestamp_field: _polled_at, precision: ms, float_fields: [ifHCInOctets_rate, ifHCOutOctets_rate], retry_count: 5 }
`,
  };
}

export function writePipelines(dir: string, p: PipelinePorts) {
  for (const [name, text] of Object.entries(pipelineFiles(p))) writeFileSync(join(dir, `${name}.yaml`), text);
}
