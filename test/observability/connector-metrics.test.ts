// The connector series of /metrics: one current state per connector, state changes counted, Kafka
// lag per partition with a total, listener drops, flow sequence gaps and exporter restarts, snmp_poll timings and errors per target, and every series of a deleted pipeline removed.
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/observability/metrics.js';

describe('connector metrics', () => {
  it('keeps one current state, counts changes, totals the lag, and forgets a pipeline', async () => {
    const m = new Metrics({ defaults: false });
    const t = m.telemetry('p');
    t.connection('source', 'kafka', 'connecting');
    t.connection('source', 'kafka', 'connected');
    t.connection('source', 'kafka', 'disconnected');
    t.connection('source', 'kafka', 'connected');
    t.consumerLag!('a', 0, 5);
    t.consumerLag!('a', 1, 7);
    t.consumerLag!('a', 0, 2);
    t.dropped!('source', 'syslog', 'queue_full', 3);
    t.dropped!('source', 'syslog', 'queue_full', 2);
    t.snmpPoll!('10.0.0.1:161', 0.2);
    t.snmpPoll!('10.0.0.2:161', 6, 'timeout');
    t.flowSequence!('gap', '192.0.2.7', 3);
    t.flowSequence!('gap', '192.0.2.7', 2);
    t.flowSequence!('restart', '192.0.2.7', 1);
    m.telemetry('other').connection('sinks[0] (mqtt)', 'mqtt', 'connected');
    const text = await m.registry.metrics();
    expect(text).toContain('svc_connector_state{pipeline="p",component="source",type="kafka",state="connected"} 1');
    expect(text).toContain('svc_connector_state{pipeline="p",component="source",type="kafka",state="disconnected"} 0');
    expect(text).toContain('svc_connector_state_changes_total{pipeline="p",component="source",type="kafka",state="connected"} 2');
    expect(text).toContain('svc_kafka_consumer_lag{pipeline="p",topic="a",partition="0"} 2');
    expect(text).toContain('svc_kafka_consumer_lag{pipeline="p",topic="",partition=""} 9');
    expect(text).toContain('svc_source_dropped_total{pipeline="p",component="source",type="syslog",reason="queue_full"} 5');
    expect(text).toContain('svc_snmp_poll_seconds_count{pipeline="p",target="10.0.0.1:161"} 1');
    expect(text).toContain('svc_snmp_poll_errors_total{pipeline="p",target="10.0.0.2:161",reason="timeout"} 1');
    expect(text).toContain('svc_flow_sequence_gaps_total{pipeline="p",exporter="192.0.2.7"} 5');
    expect(text).toContain('svc_flow_exporter_restarts_total{pipeline="p",exporter="192.0.2.7"} 1');
    expect(text).not.toMatch(/svc_snmp_poll_errors_total\{pipeline="p",target="10.0.0.1:161"/);
    m.forget('p');
    const after = await m.registry.metrics();
    expect(after).not.toMatch(/pipeline="p"/);
    expect(after).toContain('svc_connector_state{pipeline="other",component="sinks[0] (mqtt)",type="mqtt",state="connected"} 1');
  });
});
