// Prometheus metrics of spec doc 2 that apply to a standalone node, labelled by pipeline. One
// registry per daemon (tests create their own). The cluster and transform metrics are registered
// by the features that own them.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly recordsIn = this.counter('svc_records_in_total', 'Records read from sources.');
  readonly recordsOut = this.counter('svc_records_out_total', 'Records written to at least one sink.');
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

  /** Events of stateful transforms, by TransformEvent name (plus state_io: loads and saves). */
  readonly transformEvents = {
    counter_wraps: this.counter('svc_transform_counter_wraps_total', 'Counter wraps (32/64-bit) that counter_delta bridged.'),
    counter_resets: this.counter('svc_transform_counter_resets_total', 'Counter resets (device reboot, implausible drop) for which counter_delta emitted no delta.'),
    window_late_dropped: this.counter('svc_transform_window_late_dropped_total', 'Records window_aggregate dropped because their windows were already emitted.'),
    windows_emitted: this.counter('svc_transform_windows_emitted_total', 'Windows window_aggregate emitted (complete, and partial on flush runs).'),
    state_io: this.counter('svc_transform_state_io_total', 'Loads and saves of stateful transform state.'),
  };

  constructor(opts: { defaults?: boolean } = {}) {
    if (opts.defaults !== false) collectDefaultMetrics({ register: this.registry, prefix: 'svc_process_' });
  }

  private counter(name: string, help: string) {
    return new Counter({ name, help, labelNames: ['pipeline'], registers: [this.registry] });
  }

  /** Forgets a deleted pipeline's series. */
  forget(pipeline: string) {
    for (const m of [this.recordsIn, this.recordsOut, this.recordsSkipped, this.errors, this.dlq, this.chunkDuration, this.streamQueueDepth, ...Object.values(this.transformEvents)]) {
      m.remove({ pipeline });
    }
  }
}
