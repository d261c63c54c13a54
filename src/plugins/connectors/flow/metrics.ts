// The flow connector's own metrics (docs/observability.md), registered by the runtime with a
// `pipeline` label first; the source updates them by name through its telemetry (metric()).
import type { MetricDeclaration } from '../../types.js';

export const flowMetrics = [
  {
    name: 'svc_flow_sequence_gaps_total',
    help: 'Sequence numbers a flow exporter skipped, per exporter: flows for NetFlow v5, data records for IPFIX, datagrams for NetFlow v9 and sFlow.',
    kind: 'counter',
    labels: ['exporter'],
  },
  {
    name: 'svc_flow_exporter_restarts_total',
    help: 'Restarts of a flow exporter (its sysUptime went back, or its IPFIX sequence number started over), per exporter.',
    kind: 'counter',
    labels: ['exporter'],
  },
  {
    name: 'svc_flow_enrich_failures_total',
    help: 'Polls of a flow exporter’s interfaces (IF-MIB over SNMP, enrich_interfaces) that failed, per exporter: its flows are delivered without interface names.',
    kind: 'counter',
    labels: ['exporter'],
  },
  {
    name: 'svc_flow_enrich_unnamed_total',
    help: 'Flows delivered without interface names because their exporter’s first IF-MIB poll had not ended (enrich_interfaces), per exporter and reason: wait_timeout (wait_seconds ran out), wait_full (max_queue_size flows were already waiting).',
    kind: 'counter',
    labels: ['exporter', 'reason'],
  },
] as const satisfies readonly MetricDeclaration[];
