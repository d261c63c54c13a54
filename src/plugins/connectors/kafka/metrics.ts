// The kafka source's own metric (docs/observability.md), registered by the runtime with a
// `pipeline` label first, and the reporter both engines share: the lag of each partition, plus the
// source's total in the series with empty topic and partition.
import type { ComponentTelemetry, MetricDeclaration } from '../../types.js';

export const kafkaMetrics = [
  {
    name: 'svc_kafka_consumer_lag',
    help: 'Messages between the committed offset and the high watermark, per topic and partition (empty labels: the total).',
    kind: 'gauge',
    labels: ['topic', 'partition'],
  },
] as const satisfies readonly MetricDeclaration[];

type LagReporter = (topic: string, partition: number, lag: number) => void;

/** One reporter per component telemetry (one run's source), so the total outlives reconnects. */
const reporters = new WeakMap<ComponentTelemetry, LagReporter>();

/** Reports one partition's lag and the new total; undefined when the run keeps no connector metrics (nothing to compute lag for). */
export function lagReporter(telemetry: ComponentTelemetry | undefined): LagReporter | undefined {
  if (!telemetry) return undefined;
  const known = reporters.get(telemetry);
  if (known) return known;
  const gauge = telemetry.metric?.('svc_kafka_consumer_lag');
  if (!gauge) return undefined;
  const lags = new Map<string, number>();
  const report: LagReporter = (topic, partition, lag) => {
    lags.set(`${topic}\u0000${partition}`, lag);
    gauge.set({ topic, partition }, lag);
    let total = 0;
    for (const v of lags.values()) total += v;
    gauge.set({ topic: '', partition: '' }, total);
  };
  reporters.set(telemetry, report);
  return report;
}
