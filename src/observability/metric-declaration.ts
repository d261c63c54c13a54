// What a connector declares of a metric of its own, and what it updates it through. The types live
// here, below the plugins, so the metrics registry (metrics.ts) can register a declaration it is
// handed without knowing any plugin; plugins/types.ts re-exports them for connectors.

/** A connector's own Prometheus metric, declared in its plugin definition and registered once by the runtime. */
export interface MetricDeclaration {
  /** The series name, `svc_<connector>_...` (counters end in `_total`). */
  name: string;
  help: string;
  kind: 'counter' | 'gauge' | 'histogram';
  /** Its labels besides `pipeline`, which the runtime adds first. */
  labels: readonly string[];
  /** Histogram bucket bounds (seconds, ...). */
  buckets?: readonly number[];
}

/** Label values of one series (numbers are written as text). */
export type MetricLabels = Readonly<Record<string, string | number>>;

/** Updates of one declared metric: `inc` for counters (and gauges), `set` for gauges, `observe` for histograms. */
export interface MetricHandle {
  inc(labels: MetricLabels, n?: number): void;
  set(labels: MetricLabels, value: number): void;
  observe(labels: MetricLabels, value: number): void;
}
