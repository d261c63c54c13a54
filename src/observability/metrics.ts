// Prometheus metrics of spec doc 2 that apply to a standalone node, labelled by pipeline. One
// registry per daemon (tests create their own). The cluster and transform metrics are registered
// by the features that own them.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ConnectionState } from './connection-state.js';

const CONNECTION_STATES: ConnectionState[] = ['connecting', 'connected', 'disconnected', 'failed'];

/** What connectors report, by component (`source`, `sinks[0] (mqtt)`) and connector type (a run's RunOptions.telemetry). */
export interface RunTelemetry {
  connection(component: string, type: string, state: ConnectionState): void;
  consumerLag?(topic: string, partition: number, lag: number): void;
  snmpPoll?(target: string, seconds: number, error?: string): void;
  promScrape?(target: string, seconds: number, error?: string): void;
  dropped?(component: string, type: string, reason: string, n: number): void;
  flowSequence?(event: 'gap' | 'restart', exporter: string, n: number): void;
  flowEnrichFailure?(exporter: string): void;
}

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
  /** Per topic and partition; the series with empty topic and partition is the pipeline's total. */
  readonly kafkaConsumerLag = new Gauge({
    name: 'svc_kafka_consumer_lag',
    help: 'Messages between the committed offset and the high watermark, per topic and partition (empty labels: the total).',
    labelNames: ['pipeline', 'topic', 'partition'],
    registers: [this.registry],
  });

  /** snmp_poll: time to poll each target, and its failures by reason. */
  readonly snmpPollSeconds = new Histogram({
    name: 'svc_snmp_poll_seconds',
    help: 'Time snmp_poll took to poll one target (all its requests), per target.',
    labelNames: ['pipeline', 'target'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly snmpPollErrors = new Counter({
    name: 'svc_snmp_poll_errors_total',
    help: 'Targets snmp_poll could not poll, per target and reason (timeout, unreachable, refused, deadline, error).',
    labelNames: ['pipeline', 'target', 'reason'],
    registers: [this.registry],
  });

  /** prometheus_scrape: time to scrape each target, and its failures by reason. */
  readonly promScrapeSeconds = new Histogram({
    name: 'svc_prometheus_scrape_seconds',
    help: 'Time prometheus_scrape took to scrape one target (request, body and parsing), per target.',
    labelNames: ['pipeline', 'target'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly promScrapeErrors = new Counter({
    name: 'svc_prometheus_scrape_errors_total',
    help: 'Targets prometheus_scrape could not scrape, per target and reason (timeout, unreachable, status, too_large, parse, error).',
    labelNames: ['pipeline', 'target', 'reason'],
    registers: [this.registry],
  });

  readonly sourceDropped = new Counter({
    name: 'svc_source_dropped_total',
    help: 'Messages a listening source dropped because its senders cannot be slowed down (UDP syslog and traps while the pipeline is behind; traps with a wrong community or user), by reason.',
    labelNames: ['pipeline', 'component', 'type', 'reason'],
    registers: [this.registry],
  });

  /** flow: sequence numbers each exporter skipped (lost datagrams or flows), and its restarts. */
  readonly flowSequenceGaps = new Counter({
    name: 'svc_flow_sequence_gaps_total',
    help: 'Sequence numbers a flow exporter skipped, per exporter: flows for NetFlow v5, data records for IPFIX, datagrams for NetFlow v9 and sFlow.',
    labelNames: ['pipeline', 'exporter'],
    registers: [this.registry],
  });
  readonly flowExporterRestarts = new Counter({
    name: 'svc_flow_exporter_restarts_total',
    help: 'Restarts of a flow exporter (its sysUptime went back, or its IPFIX sequence number started over), per exporter.',
    labelNames: ['pipeline', 'exporter'],
    registers: [this.registry],
  });

  readonly flowEnrichFailures = new Counter({
    name: 'svc_flow_enrich_failures_total',
    help: 'Polls of a flow exporter’s interfaces (IF-MIB over SNMP, enrich_interfaces) that failed, per exporter: its flows are delivered without interface names.',
    labelNames: ['pipeline', 'exporter'],
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

  constructor(opts: { defaults?: boolean } = {}) {
    if (opts.defaults !== false) collectDefaultMetrics({ register: this.registry, prefix: 'svc_process_' });
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
  private readonly labelled = new Map<string, Map<string, { metric: Gauge<string> | Counter<string> | Histogram<string>; labels: Record<string, string> }>>();
  private track(name: string, metric: Gauge<string> | Counter<string> | Histogram<string>, labels: Record<string, string>) {
    let m = this.labelled.get(labels.pipeline!);
    if (!m) this.labelled.set(labels.pipeline!, (m = new Map()));
    m.set(name + JSON.stringify(labels), { metric, labels });
  }

  /** The connector telemetry of one pipeline's runs. */
  telemetry(pipeline: string): RunTelemetry {
    const lags = new Map<string, number>();
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
      consumerLag: (topic, partition, lag) => {
        lags.set(`${topic}\u0000${partition}`, lag);
        const one = { pipeline, topic, partition: String(partition) };
        this.kafkaConsumerLag.set(one, lag);
        this.track('lag', this.kafkaConsumerLag, one);
        let total = 0;
        for (const v of lags.values()) total += v;
        const all = { pipeline, topic: '', partition: '' };
        this.kafkaConsumerLag.set(all, total);
        this.track('lag', this.kafkaConsumerLag, all);
      },
      dropped: (component, type, reason, n) => {
        const labels = { pipeline, component, type, reason };
        this.sourceDropped.inc(labels, n);
        this.track('dropped', this.sourceDropped, labels);
      },
      promScrape: (target, seconds, error) => {
        const labels = { pipeline, target };
        this.promScrapeSeconds.observe(labels, seconds);
        this.track('prom_scrape', this.promScrapeSeconds, labels);
        if (error) {
          const e = { pipeline, target, reason: error };
          this.promScrapeErrors.inc(e);
          this.track('prom_scrape_errors', this.promScrapeErrors, e);
        }
      },
      flowSequence: (event, exporter, n) => {
        const labels = { pipeline, exporter };
        const metric = event === 'gap' ? this.flowSequenceGaps : this.flowExporterRestarts;
        metric.inc(labels, n);
        this.track(`flow_${event}`, metric, labels);
      },
      flowEnrichFailure: (exporter) => {
        const labels = { pipeline, exporter };
        this.flowEnrichFailures.inc(labels);
        this.track('flow_enrich_failures', this.flowEnrichFailures, labels);
      },
      snmpPoll: (target, seconds, error) => {
        const labels = { pipeline, target };
        this.snmpPollSeconds.observe(labels, seconds);
        this.track('snmp_poll', this.snmpPollSeconds, labels);
        if (error) {
          const e = { pipeline, target, reason: error };
          this.snmpPollErrors.inc(e);
          this.track('snmp_poll_errors', this.snmpPollErrors, e);
        }
      },
    };
  }
}
