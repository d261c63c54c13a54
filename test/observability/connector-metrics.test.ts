// The connector series of /metrics: one current state per connector, state changes counted, listener
// drops, and the metrics connectors declare (Kafka lag per partition with a total, flow sequence gaps
// and exporter restarts, snmp_poll timings and errors per target), and every series of a deleted
// pipeline removed.
import { describe, expect, it } from 'vitest';
import { componentMetrics, Metrics } from '../../src/observability/metrics.js';
import { kafkaMetrics, lagReporter } from '../../src/plugins/connectors/kafka/metrics.js';
import { flowMetrics } from '../../src/plugins/connectors/flow/metrics.js';
import { snmpPollMetrics } from '../../src/plugins/connectors/snmp_poll/metrics.js';
import { connectorMetrics } from '../../src/plugins/registry.js';
import type { ComponentTelemetry, MetricDeclaration } from '../../src/plugins/types.js';

/** A component's telemetry as the runner binds it for a plugin that declares `declared`. */
function component(m: Metrics, pipeline: string, declared: readonly MetricDeclaration[]): ComponentTelemetry {
  const t = m.telemetry(pipeline);
  return { connection: () => {}, metric: componentMetrics(t, declared, () => {}) };
}

describe('connector metrics', () => {
  it('keeps one current state, counts changes, totals the lag, and forgets a pipeline', async () => {
    const m = new Metrics({ defaults: false, connectorMetrics: connectorMetrics() });
    const t = m.telemetry('p');
    t.connection('source', 'kafka', 'connecting');
    t.connection('source', 'kafka', 'connected');
    t.connection('source', 'kafka', 'disconnected');
    t.connection('source', 'kafka', 'connected');
    const source = component(m, 'p', kafkaMetrics);
    const lag = lagReporter(source)!;
    // One reporter per component, so the total outlives the source's reconnects.
    expect(lagReporter(source)).toBe(lag);
    lag('a', 0, 5);
    lag('a', 1, 7);
    lag('a', 0, 2);
    t.dropped!('source', 'syslog', 'queue_full', 3);
    t.dropped!('source', 'syslog', 'queue_full', 2);
    const snmp = component(m, 'p', snmpPollMetrics).metric!;
    snmp('svc_snmp_poll_seconds').observe({ target: '10.0.0.1:161' }, 0.2);
    snmp('svc_snmp_poll_seconds').observe({ target: '10.0.0.2:161' }, 6);
    snmp('svc_snmp_poll_errors_total').inc({ target: '10.0.0.2:161', reason: 'timeout' });
    const flow = component(m, 'p', flowMetrics).metric!;
    flow('svc_flow_sequence_gaps_total').inc({ exporter: '192.0.2.7' }, 3);
    flow('svc_flow_sequence_gaps_total').inc({ exporter: '192.0.2.7' }, 2);
    flow('svc_flow_exporter_restarts_total').inc({ exporter: '192.0.2.7' });
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
