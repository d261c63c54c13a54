// Prometheus metrics of spec doc 2 that apply to a standalone node, labelled by pipeline. One
// registry per daemon (tests create their own). The cluster and transform metrics are registered
// by the features that own them; a connector's own metrics are declared in its plugin folder
// (`metrics` of its definition) and registered here, generically, once per registry.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ConnectionState } from './connection-state.js';
import type { MetricDeclaration, MetricHandle, MetricLabels } from './metric-declaration.js';

const CONNECTION_STATES: ConnectionState[] = ['connecting', 'connected', 'disconnected', 'failed'];

/** An update of a connector metric: `inc` (counters, gauges), `set` (gauges), `observe` (histograms). */
export type MetricOp = 'inc' | 'set' | 'observe';

/** What connectors report, by component (`source`, `sinks[0] (mqtt)`) and connector type (a run's RunOptions.telemetry). */
export interface RunTelemetry {
  connection(component: string, type: string, state: ConnectionState): void;
  dropped?(component: string, type: string, reason: string, n: number): void;
  /** One update of a metric a connector declares (MetricDeclaration), by name; `labels` are its declared ones (the runtime adds `pipeline`). */
  metric?(name: string, op: MetricOp, labels: MetricLabels, value: number): void;
}

type AnyMetric = Gauge<string> | Counter<string> | Histogram<string>;

/** A declared connector metric registered on one registry. */
type Registered =
  | { decl: MetricDeclaration; kind: 'counter'; metric: Counter<string> }
  | { decl: MetricDeclaration; kind: 'gauge'; metric: Gauge<string> }
  | { decl: MetricDeclaration; kind: 'histogram'; metric: Histogram<string> };

export class Metrics {
  readonly registry = new Registry();
  readonly recordsIn = this.counter('svc_records_in_total', 'Records read from sources.');
  readonly recordsOut = this.counter('svc_records_out_total', 'Records written to at least one sink.');
  readonly recordsFiltered = this.counter(
    'svc_records_filtered_total',
    'Records dropped on purpose: a transform gave none for them (filter, limit, ...), or no sink took them.',
  );
  readonly recordsSkipped = this.counter('svc_records_skipped_total', 'Records skipped by a recorded error (rule 6).');
  readonly errors = this.counter('svc_errors_total', 'Record errors plus failed runs.');
  readonly dlq = this.counter('svc_dlq_total', 'Envelopes written to the dead-letter queue.');
  readonly chunkDuration = new Histogram({
    name: 'svc_chunk_duration_seconds',
    help: 'Time from a chunk being read to its delivery to every sink.',
    labelNames: ['pipeline'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly streamQueueDepth = new Gauge({
    name: 'svc_stream_queue_depth',
    help: 'Chunks in flight between source and sinks (bounded at 2 x thread_workers).',
    labelNames: ['pipeline'],
    registers: [this.registry],
  });

  /** Connection state of each connector: 1 for its current state, 0 for the others. */
  readonly connectorState = new Gauge({
    name: 'svc_connector_state',
    help: 'Connection state of a source or sink (1 = the current state).',
    labelNames: ['pipeline', 'component', 'type', 'state'],
    registers: [this.registry],
  });
  readonly connectorStateChanges = new Counter({
    name: 'svc_connector_state_changes_total',
    help: 'Changes of a connector into each connection state (disconnected counts lost connections and failed connects).',
    labelNames: ['pipeline', 'component', 'type', 'state'],
    registers: [this.registry],
  });
  readonly sourceDropped = new Counter({
    name: 'svc_source_dropped_total',
    help: 'Messages a listening source dropped because its senders cannot be slowed down (UDP syslog and traps while the pipeline is behind; traps with a wrong community or user), by reason.',
    labelNames: ['pipeline', 'component', 'type', 'reason'],
    registers: [this.registry],
  });

  /** Events of stateful transforms, by TransformEvent name (plus state_io: loads and saves). */
  readonly transformEvents = {
    counter_wraps: this.counter('svc_transform_counter_wraps_total', 'Counter wraps (32/64-bit) that counter_delta bridged.'),
    counter_resets: this.counter(
      'svc_transform_counter_resets_total',
      'Counter resets (device reboot, implausible drop) for which counter_delta emitted no delta.',
    ),
    window_late_dropped: this.counter(
      'svc_transform_window_late_dropped_total',
      'Records window_aggregate dropped because their windows were already emitted.',
    ),
    windows_emitted: this.counter('svc_transform_windows_emitted_total', 'Windows window_aggregate emitted (complete, and partial on flush runs).'),
    state_io: this.counter('svc_transform_state_io_total', 'Loads and saves of stateful transform state.'),
  };

  /** The connectors' declared metrics, by name. */
  private readonly declared = new Map<string, Registered>();

  /**
   * `connectorMetrics`: the metrics connectors declare, registered here once (the daemon hands in
   * plugins/registry.ts connectorMetrics(); this layer knows no plugin).
   */
  constructor(opts: { defaults?: boolean; connectorMetrics?: readonly MetricDeclaration[] } = {}) {
    if (opts.defaults !== false) collectDefaultMetrics({ register: this.registry, prefix: 'svc_process_' });
    for (const decl of opts.connectorMetrics ?? []) this.declare(decl);
  }

  private declare(decl: MetricDeclaration) {
    if (this.declared.has(decl.name)) return;
    const common = { name: decl.name, help: decl.help, labelNames: ['pipeline', ...decl.labels], registers: [this.registry] };
    const r: Registered =
      decl.kind === 'counter'
        ? { decl, kind: 'counter', metric: new Counter(common) }
        : decl.kind === 'gauge'
          ? { decl, kind: 'gauge', metric: new Gauge(common) }
          : { decl, kind: 'histogram', metric: new Histogram({ ...common, ...(decl.buckets ? { buckets: [...decl.buckets] } : {}) }) };
    this.declared.set(decl.name, r);
  }

  private counter(name: string, help: string) {
    return new Counter({ name, help, labelNames: ['pipeline'], registers: [this.registry] });
  }

  /** Forgets a deleted pipeline's series. */
  forget(pipeline: string) {
    for (const m of [
      this.recordsIn,
      this.recordsOut,
      this.recordsFiltered,
      this.recordsSkipped,
      this.errors,
      this.dlq,
      this.chunkDuration,
      this.streamQueueDepth,
      ...Object.values(this.transformEvents),
    ]) {
      m.remove({ pipeline });
    }
    for (const { metric, labels } of this.labelled.get(pipeline)?.values() ?? []) metric.remove(labels);
    this.labelled.delete(pipeline);
  }

  /** Connector series by pipeline, keyed by metric name and labels (which vary), for forget(). */
  private readonly labelled = new Map<string, Map<string, { metric: AnyMetric; labels: Record<string, string> }>>();
  private track(name: string, metric: AnyMetric, labels: Record<string, string>) {
    let m = this.labelled.get(labels.pipeline!);
    if (!m) this.labelled.set(labels.pipeline!, (m = new Map()));
    m.set(name + JSON.stringify(labels), { metric, labels });
  }

  /** The connector telemetry of one pipeline's runs. */
  telemetry(pipeline: string): RunTelemetry {
    return {
      connection: (component, type, state) => {
        for (const s of CONNECTION_STATES) {
          const labels = { pipeline, component, type, state: s };
          this.connectorState.set(labels, s === state ? 1 : 0);
          this.track('state', this.connectorState, labels);
        }
        this.connectorStateChanges.inc({ pipeline, component, type, state });
        this.track('changes', this.connectorStateChanges, { pipeline, component, type, state });
      },
      dropped: (component, type, reason, n) => {
        const labels = { pipeline, component, type, reason };
        this.sourceDropped.inc(labels, n);
        this.track('dropped', this.sourceDropped, labels);
      },
      metric: (name, op, given, value) => {
        const r = this.declared.get(name);
        if (!r) return;
        // The declared order, pipeline first: the series read exactly as they did when each was a field here.
        const labels: Record<string, string> = { pipeline };
        for (const l of r.decl.labels) {
          const v = given[l];
          if (v !== undefined) labels[l] = String(v);
        }
        if (r.kind === 'histogram') {
          if (op !== 'observe') return;
          r.metric.observe(labels, value);
        } else if (r.kind === 'counter') {
          // A counter only goes up: a negative count is a connector's bug, not worth a failed run.
          if (op !== 'inc' || !(value >= 0)) return;
          r.metric.inc(labels, value);
        } else if (op === 'set') r.metric.set(labels, value);
        else if (op === 'inc') r.metric.inc(labels, value);
        else return;
        this.track(name, r.metric, labels);
      },
    };
  }
}

/**
 * A component's `metric(name)` (ComponentTelemetry): handles bound to the run's telemetry for the
 * metrics its plugin declares. An undeclared name is a bug the registry test catches; at run time it
 * records nothing and is warned about once.
 */
export function componentMetrics(
  t: RunTelemetry,
  declared: readonly MetricDeclaration[] | undefined,
  warn: (message: string) => void,
): ((name: string) => MetricHandle) | undefined {
  const report = t.metric?.bind(t);
  if (!report) return undefined;
  const names = new Set((declared ?? []).map((d) => d.name));
  const handles = new Map<string, MetricHandle>();
  const ignored: MetricHandle = { inc: () => {}, set: () => {}, observe: () => {} };
  return (name) => {
    let h = handles.get(name);
    if (h) return h;
    if (names.has(name)) {
      h = {
        inc: (labels, n = 1) => report(name, 'inc', labels, n),
        set: (labels, v) => report(name, 'set', labels, v),
        observe: (labels, v) => report(name, 'observe', labels, v),
      };
    } else {
      warn(`metric ${name} is not declared by this connector (its plugin's \`metrics\`): its updates are not recorded`);
      h = ignored;
    }
    handles.set(name, h);
    return h;
  };
}
