// The plugin unit: every source, sink, serializer and transform is one module that default-exports
// one of these definitions. Its TypeBox schema is the single source for validation, `svc plugins`,
// /api/plugins and the generated reference in docs/plugins/.
import type { Static, TObject } from '@sinclair/typebox';
import type { ConnectionState } from '../observability/connection-state.js';
import type { MetricDeclaration, MetricHandle } from '../observability/metric-declaration.js';
import type { MibResolver } from '../mib/resolver.js';
import type { Logger } from '../observability/log.js';
import type { ProcessedFiles } from '../store/processed.js';
import type { WebhookHub } from './connector-runtime/webhook-hub.js';

/** A record flowing through a pipeline. */
export type Rec = Record<string, unknown>;

/** Metadata a source attaches to the bytes it yields (file name, topic, ...). */
export interface SourceMeta {
  /** File or object name (a done suffix stripped). */
  source_filename?: string;
  /** Absolute path or full object key. */
  source_path?: string;
  /** Directory relative to the source's root ('' at the top): `{source_path}` in templates. */
  source_relative_dir?: string;
  source_dir?: string;
  source_size?: number;
  source_mtime?: string;
  [key: string]: unknown;
}

export type PluginKind = 'source' | 'sink' | 'serializer' | 'transform';

export interface Example {
  title: string;
  /** A YAML fragment: the component object itself (with `type`), as it sits in a pipeline. */
  yaml: string;
  /**
   * A worked example (serializers): input bytes and the records they decode to. The registry test
   * decodes `input` with this example's config and checks the result, so the docs cannot drift.
   */
  worked?: { input: string; encoding?: 'utf8' | 'hex' | 'base64'; records: Rec[] };
}

/** A problem found by a plugin's cross-field lint; `path` is relative to the component object. */
export interface LintIssue {
  path: string;
  message: string;
}

export type { ProcessedFiles } from '../store/processed.js';

/** What every plugin is handed when it is created. */
export interface PluginContext {
  pipeline: string;
  log: Logger;
  /** Aborted when the run is stopped; long waits inside a plugin should honour it. */
  signal: AbortSignal;
  /** The pipeline's processed-file memory (daemon: database; CLI: a state file). */
  processed: ProcessedFiles;
  /** Pipeline-level `skip_processed`; sources OR it with their own flag. */
  skipProcessed: boolean;
  /**
   * Services of the daemon (absent in `svc run`): push sources register here; `stateDir` is where
   * plugins keep durable state of their own (the webhook spool).
   */
  services?: { webhooks?: WebhookHub; stateDir?: string };
  /** The run's schedule type: a source of mode `both` reads continuously under `stream`, else once. */
  schedule?: 'interval' | 'cron' | 'manual' | 'stream';
  /** This component's place in the pipeline (`source`, `sinks[0] (mqtt)`): a metric label. */
  component?: string;
  /** Connection state and connector gauges, bound to this component (the daemon's metrics). */
  telemetry?: ComponentTelemetry;
  /** Removes every secret of the pipeline (passwords, tokens, URL credentials) from a text. */
  redact?: (text: string) => string;
  /**
   * The MIBs SNMP connectors resolve names with: the engine runner gives this process's MIB store,
   * a cluster worker the MIBs synced from its manager in front of it (absent in a dry run).
   */
  mibs?: MibResolver;
  /**
   * A shard of a sharded batch run (issue 33, `workers: {count}` on a source that declares `shard`):
   * the identities of the targets this run owns. Absent: the run owns every target (standalone,
   * one shard). A source polls only the targets it owns (connector-runtime/target-fleet.ts `owned`).
   */
  shard?: RunShard;
}

/** What one shard of a sharded batch run owns (PluginContext.shard). */
export interface RunShard {
  /** The shard's number in its run (0-based). */
  index: number;
  /** Target identities (snmp_poll: `_target`; prometheus_scrape: the URL as configured). */
  targets: ReadonlySet<string>;
}

export type { ConnectionState } from '../observability/connection-state.js';

export interface ComponentTelemetry {
  connection(state: ConnectionState): void;
  /** Listeners that cannot slow their senders (UDP): `n` messages dropped, with the reason class (queue_full, community...). */
  dropped?(reason: string, n: number): void;
  /**
   * A metric this connector declares (`metrics` of its plugin definition), by name; absent when the
   * run keeps no connector metrics. The runtime adds the `pipeline` label. A name the plugin does
   * not declare gives a handle that records nothing (and a warning): test/plugins/registry.test.ts
   * checks that every name a connector folder uses is declared.
   */
  metric?(name: string): MetricHandle;
}

export type { MetricDeclaration, MetricHandle, MetricLabels } from '../observability/metric-declaration.js';

/**
 * What a connector promises about delivery, stated on its generated page: `at-least-once` when it
 * acknowledges (commits, acks) only after every record was written or dead-lettered; `at-most-once`
 * when the protocol offers no acknowledgement (or the connector was told not to wait for one).
 */
export interface Delivery {
  guarantee: 'at-least-once' | 'at-most-once';
  why: string;
}

/** The client library a connector runs on, when it has a choice (kafka): shown by `svc plugins` and GET /api/plugins. */
export interface PluginEngine {
  name: string;
  /** A native library (fast) rather than a fallback. */
  native: boolean;
  /** In words: which, why, and how to get the better one. */
  note: string;
}

/** Handed to a connector's reachability check (`POST /api/connectors/test`). */
export interface TestContext {
  log: Logger;
  /** Aborted when the check runs out of time. */
  signal: AbortSignal;
}

interface PluginBase<S extends TObject> {
  kind: PluginKind;
  key: string;
  /** One line: what it does. */
  summary: string;
  status?: 'stable' | 'beta';
  config: S;
  /** Cross-field checks of a config that passed the schema; `ctx`: what the pipeline check knows of the process (a serializer's schema folder). */
  lint?(c: Static<S>, ctx?: SerializerContext): LintIssue[];
  examples: Example[];
}

/** Sources and sinks: the parts the connector runtime needs beside the plugin unit. */
interface ConnectorBase<S extends TObject> extends PluginBase<S> {
  delivery: Delivery;
  /**
   * A bounded reachability check: connect, authenticate, one cheap operation, close. Throws with a
   * message that tells the user what to fix (the runtime removes secrets from it and bounds its time).
   */
  test(c: Static<S>, ctx: TestContext): Promise<void>;
  /** The engine it would run on here, judged without loading it (no SDK is loaded at import). */
  engine?(): PluginEngine;
  /** Its own metrics (ComponentTelemetry.metric); the runtime registers each once per daemon. */
  metrics?: readonly MetricDeclaration[];
}

// ---- sources ---------------------------------------------------------------------------------

/** One unit of input: a file, an object, a message. Finalized only after all its records drained. */
export interface SourceUnit {
  meta: SourceMeta;
  /** Size in bytes when known up front (for progress). */
  size?: number;
  /**
   * The unit is a batch of separate messages: each Buffer that read() yields is one complete
   * message, decoded on its own (a JSON body each), never cut or joined with its neighbours.
   */
  messages?: boolean;
  /** The unit's bytes, streamed. */
  read(): AsyncIterable<Buffer>;
  /**
   * A message unit already in memory (a stream source's batch): its messages, what read() yields,
   * handed over as one array rather than awaited one by one.
   */
  bodies?: readonly Buffer[];
  /**
   * A message unit whose connector parsed the wire format itself (syslog, gNMI): its messages as
   * records, plain JSON objects. With `serializer_in: json` (what these sources document) they go to
   * the transforms as they are; with another serializer_in, read() gives them as JSON bytes to decode.
   * `size` is then the bytes received (bytes_in).
   */
  records?: Rec[];
  /**
   * Inputs the connector received but could not decode itself (a malformed flow datagram, a scraped body that does not parse): each is
   * dead-lettered at stage parse with its reason and its bytes, as a serializer_in failure would be.
   */
  undecodable?: { raw: Buffer; why: string }[];
  /**
   * Called once when every record of the unit has been written or dead-lettered (`delivered`
   * true) or when the run gave up on it (`delivered` false: leave the input where it is).
   */
  done?(delivered: boolean): Promise<void>;
}

export interface Source {
  /** Yields units until exhausted (batch) or until `signal` aborts (stream). */
  units(signal: AbortSignal): AsyncIterable<SourceUnit>;
  /** Messages about units passed over on purpose (noted skips), collected by the runtime. */
  notes?: string[];
  close?(): Promise<void>;
}

export interface SourcePlugin<S extends TObject = TObject> extends ConnectorBase<S> {
  kind: 'source';
  /** `both`: runs once per batch run, or continuously under a stream schedule (redis). */
  mode: 'batch' | 'stream' | 'both';
  create(c: Static<S>, ctx: PluginContext): Source;
  /**
   * A batch source whose work splits by target (issue 33): the identities of the targets one run
   * polls, in a stable order. The manager of a cluster cuts them into shards over the workers
   * (rendezvous hashing, src/cluster/hrw.ts) when the pipeline sets `workers: {count}`; each worker
   * runs the pipeline with `PluginContext.shard` naming the targets it owns. Absent: one run does
   * all the work (`workers` on such a batch pipeline is a config error).
   */
  shard?: { targets(c: Static<S>): Promise<string[]> };
  /**
   * What this source needs from the deployment around it, as Vector's `SourceConfig::resources()`:
   * the ports it listens on, or the worker ingress it takes pushes on. Absent or `[]`: it receives
   * nothing (it reads or polls). The cluster reads it and nothing else (docs/connectors/README.md):
   * a pipeline's Kubernetes Service exposes these ports (`kubernetes` block), and a stream whose
   * source takes pushes on the ingress runs on every worker. Called with the source's config with
   * its schema defaults applied (not necessarily validated: the cluster checks the ports), so a
   * default port lives in the source's schema. Pure: no I/O.
   */
  resources?(c: Static<S>): SourceResource[];
}

/**
 * One thing a source needs from the deployment (SourcePlugin.resources):
 * - `listen`: it binds `host`:`port` over `protocol` itself (syslog, snmp_trap). `name` names the
 *   port in a Kubernetes Service: an IANA service name (lower case letters, digits and `-`, at
 *   most 15 characters), unique among the source's resources.
 *   `pushes`: what arrives there may go to any replica of the source (each sender's request is
 *   whole and answered by the one that took it: otlp), so the stream runs on every worker, as for
 *   `ingress`.
 * - `ingress`: it takes HTTP pushes at POST /webhooks/`path` on the daemon's (a worker's) ingress
 *   port (webhook, prometheus_rw), which any worker may answer.
 */
export type SourceResource =
  | { kind: 'listen'; protocol: 'tcp' | 'udp'; host: string; port: number; name: string; pushes?: boolean }
  | { kind: 'ingress'; path: string };

// ---- serializers -----------------------------------------------------------------------------

/**
 * How the engine may cut a byte stream into independently decodable chunks:
 * `lines` at newline boundaries (the first `headerLines` lines are handed to every chunk; with
 * `quote`, only newlines outside quotes count), `whole` only the complete unit.
 */
export interface Framing {
  kind: 'lines' | 'whole' | 'split';
  headerLines?: number;
  /** Quote character inside which a newline does not end a record (CSV). */
  quote?: string;
  /**
   * kind `split` (formats that are not line-oriented but can be streamed: PM XML, Avro container
   * files, concatenated BER records...): cuts the unit's byte stream into pieces that decode on
   * their own, of about `targetBytes` each (at most `maxRecords` records when record_chunk_size is
   * set), so a large file is never held whole. Runs on the main thread; `header` is context every
   * piece needs (a file header, a container schema) and is handed to decode() with the piece.
   */
  split?(stream: AsyncIterable<Buffer>, opts: SplitOptions): AsyncIterable<SplitPiece>;
}

export interface SplitOptions {
  targetBytes: number;
  /** record_chunk_size, when set. */
  maxRecords?: number;
}

export interface SplitPiece {
  data: Buffer;
  header?: Buffer;
}

/** Receives the outcome of decoding: records, and the raw bytes of what would not parse. */
export interface DecodeOut {
  record(r: Rec): void;
  error(message: string, raw: Buffer | string): void;
  /** A noted skip (rule 6): a message without a skipped-record count (a truncated file closed early). */
  note(message: string): void;
}

export interface DecodeInput {
  /** The bytes of this chunk (for `lines` framing: whole lines only, without the header). */
  data: Buffer;
  /** Header lines of the unit (for `lines` framing with headerLines > 0), else undefined. */
  header?: Buffer;
  /** 1-based number of the first line of `data` within its unit (`lines` framing); piece number for `split`. */
  firstLine: number;
}

export interface Decoder {
  framing: Framing;
  decode(input: DecodeInput, out: DecodeOut): void;
}

/**
 * Encodes records for a sink. `body` encodes one batch; file-like sinks put `head` before the first
 * batch of a file, `separator` between batches and `tail` at the end, so that a file built from
 * many batches is one valid document (a JSON array, a CSV with one header).
 */
export interface Encoder {
  head(records: Rec[]): string | Uint8Array;
  body(records: Rec[]): Buffer;
  separator: string | Uint8Array;
  tail: string | Uint8Array;
  /** Encodes one record on its own (message sinks: Kafka, MQTT...). */
  one(record: Rec): Buffer;
  /** File extension without dot, for docs and templates. */
  extension: string;
  /**
   * Every payload (body, one) is a complete file that cannot be concatenated with another (Parquet:
   * its footer indexes its own row groups). File sinks start a new file (part) for each batch
   * instead of appending; head, separator and tail are empty.
   */
  whole?: boolean;
}

export interface SerializerPlugin<S extends TObject = TObject> extends PluginBase<S> {
  kind: 'serializer';
  /** `in` when it only decodes, `out` when it only encodes. */
  direction: 'both' | 'in' | 'out';
  decoder?(c: Static<S>, ctx?: SerializerContext): Decoder;
  encoder?(c: Static<S>, ctx?: SerializerContext): Encoder;
  /**
   * Asynchronous preparation, once per run on the main thread before any decoder or encoder is
   * built (fetching a schema from a registry). Its result replaces the config handed to decoder()
   * and encoder(), in worker threads too, so it must stay plain data.
   */
  resolve?(c: Static<S>, ctx: ResolveContext): Promise<Static<S>>;
}

/**
 * What a serializer is told of the process it runs in (decoder, encoder, lint and resolve), by whoever
 * builds it: the engine (runs, and worker threads through the plan), the pipeline check, the DLQ reader.
 */
export interface SerializerContext {
  /** The folder a relative `schema_file` is taken under (SVC_SCHEMA_DIR). Absent: only absolute paths are found. */
  schemaDir?: string;
}

/** Handed to SerializerPlugin.resolve by the engine runner. */
export interface ResolveContext extends SerializerContext {
  signal: AbortSignal;
  direction: 'in' | 'out';
  /**
   * The process's schema registry (SVC_SCHEMA_REGISTRY_URL, _USERNAME, _PASSWORD): the registry of a
   * serializer without its own schema_registry_url, and the credentials of every registry.
   */
  schemaRegistry?: SchemaRegistryDefaults;
}

export interface SchemaRegistryDefaults {
  url?: string;
  username?: string;
  password?: string;
}

// ---- transforms ------------------------------------------------------------------------------

/** Per-record context a transform may use. */
export interface RecordContext {
  meta: SourceMeta;
  /** Note a skip that is not an error (rule 6: a message only, no counter). */
  note(message: string): void;
}

/** Returns the record (possibly changed in place), several records, or null to drop it. */
export type TransformFn = (r: Rec, ctx: RecordContext) => Rec | Rec[] | null;

/**
 * When a transform that holds records is asked for them: at the end of each source unit, at the
 * end of the run, or at the end of a flush run (`POST .../run?flush=true`, which replaces `run`).
 */
export type DrainPoint = 'unit' | 'run' | 'flush';

export interface Transform {
  apply: TransformFn;
  /**
   * Transforms that hold records (aggregate, sort, window_aggregate) hand them on here; what they
   * return continues through the rest of the chain. The engine runs a chain from the first such
   * transform on the main thread, in input order, whatever thread_workers is.
   */
  drain?(at: DrainPoint): Rec[];
  /**
   * True for a transform whose `null` means the record was taken in, not dropped: its result comes
   * later, from drain or a later record (aggregate, sort, window_aggregate). The records any other
   * transform returns none for are counted as filtered (the run record's records_filtered).
   */
  holdsRecords?: boolean;
  /**
   * Asynchronous set-up before the first record (a lookup query) and tear-down after the last.
   * Such a transform runs on the main thread (worker threads hand records over before it).
   */
  open?(): Promise<void>;
  close?(): Promise<void>;
  /**
   * Durable state (stateful transforms): `save` returns plain JSON, `load` takes what an earlier
   * `save` returned (or a body PUT through the API) and throws on a body it cannot use.
   */
  state?: { save(): unknown; load(body: unknown): void };
}

/** Events of stateful transforms, counted by the daemon as svc_transform_<event>_total. */
export type TransformEvent = 'counter_wraps' | 'counter_resets' | 'window_late_dropped' | 'windows_emitted';

export interface TransformContext extends Pick<PluginContext, 'pipeline' | 'log'> {
  /** Counts an event (a metric in the daemon; nothing elsewhere). */
  count?(event: TransformEvent, n?: number): void;
}

export interface TransformPlugin<S extends TObject = TObject> extends PluginBase<S> {
  kind: 'transform';
  /** Stateful transforms are refused with thread_workers > 1 and at sink level (rule 4). */
  stateful?: boolean;
  /**
   * A stateful transform whose state can follow the targets of a sharded batch run (issue 33):
   * `split` cuts a body that `state.save` returned by target identity (the `_target` of the records
   * each part came from; parts it cannot place go under ''), `join` makes one loadable body of such
   * parts. The manager keeps the parts by target, so a target that moves to another worker takes
   * its state along. `refuse` says why a config cannot keep its state by target (undefined: it
   * can). Absent: the transform is refused in sharded runs (CFG_STATEFUL).
   */
  targetState?: { split(body: unknown): Map<string, unknown>; join(parts: unknown[]): unknown; refuse?(c: Static<S>): string | undefined };
  /**
   * True when this config holds records past the end of their unit (scope `run`): the run's input
   * units are finalized only after its drain, and streams and sink chains refuse it.
   */
  defersUnits?(c: Static<S>): boolean;
  create(c: Static<S>, ctx: TransformContext): Transform;
}

// ---- sinks -----------------------------------------------------------------------------------

/** One write: the records of a chunk that passed this sink's condition and transforms. */
export interface SinkBatch {
  /** The records, encoded as one payload with the sink's serializer_out; empty for a sink that declares `accepts: 'records'`. */
  payload: Buffer;
  /** `Encoder.head` for these records (file sinks write it at the start of a file). */
  head: string | Uint8Array;
  count: number;
  /** The records themselves; present for sinks that declare `accepts: 'records'`. */
  records?: Rec[];
  /** Metadata of the source unit the records came from. */
  meta: SourceMeta;
  /** First record of the batch, for `{field.<name>}` templates. */
  first?: Rec;
}

export interface SinkRunInfo {
  runId: string;
  pipeline: string;
  startedAt: Date;
}

/**
 * What a records sink reports when the peer answered for each record (a SQL chunk, an Elasticsearch
 * `_bulk`, an InfluxDB partial write): indexes into `batch.records`. Every record not named landed.
 */
export interface WriteResult {
  /** Refused for good (a constraint, a mapping error): dead-lettered with the peer's reason, stage `sink`. */
  rejected?: { index: number; reason: string }[];
  /**
   * Refused for now (throttled, HTTP 429): the runtime writes these again as a smaller batch, under
   * the sink's retry policy (retry_count, retry_delay_seconds); when retries run out they fail like a write.
   */
  retry?: { index: number; reason: string }[];
  /** With `retry`: the peer's own wait before it (HTTP `Retry-After`), in ms; the runtime waits at least this long. */
  retryAfterMs?: number;
  /** Bytes sent to the peer for this batch (records sinks: their own wire format), counted in `bytes_out`. */
  bytes?: number;
}

/** What a deferred-delivery sink's flush() found refused among its earlier writes (records sinks). */
export interface FlushResult {
  /** Each by the batch write() was given and the record's index in it, with the peer's reason. */
  rejected?: { batch: SinkBatch; index: number; reason: string }[];
}

export interface Sink {
  open?(run: SinkRunInfo): Promise<void>;
  /** Resolves when the batch landed; a WriteResult names the records that did not (records sinks). */
  write(batch: SinkBatch): Promise<void | WriteResult>;
  /** End of a source unit: close what is tied to it (e.g. single-mode files). */
  endUnit?(meta: SourceMeta): Promise<void>;
  /**
   * Make everything written so far durable. The runtime calls it before it finalizes source units
   * (moves files, commits offsets), once for many small units; a sink without it must make each
   * write durable by the time write() resolves. A sink with it may resolve write() as soon as its
   * client holds the batch (deferred delivery: kafka on librdkafka), so that the next write overlaps
   * the previous one's round trip; flush() then waits until the peer acknowledged every earlier
   * write, returns the records it refused for good (dead-lettered like WriteResult.rejected), and
   * throws for anything else not delivered (the units stay unacknowledged and are read again).
   */
  flush?(): Promise<void | FlushResult>;
  /** End of the run: flush and close everything. */
  close?(): Promise<void>;
}

export interface SinkPlugin<S extends TObject = TObject> extends ConnectorBase<S> {
  kind: 'sink';
  /** `payload`: takes the encoded bytes; `records`: takes the records (SQL, stores). */
  accepts: 'payload' | 'records';
  create(c: Static<S>, ctx: PluginContext & { encoder: Encoder }): Sink;
  /** Reads back what this sink wrote as a pipeline's DLQ (GET /api/pipelines/{name}/dlq); absent: it cannot be read back. */
  dlqReader?(c: Static<S>, ctx: DlqReaderContext): DlqReader;
}

// ---- reading a DLQ back (docs/dead-letters.md) ----------------------------------------------

export interface DlqReaderContext {
  pipeline: string;
  log: Logger;
  /** Aborted when the listing runs out of time or the client goes away. */
  signal: AbortSignal;
}

/**
 * What a DLQ sink stored, read once and bounded (a file listing, a table, the stream up to its end
 * offsets at the time of the call): payloads written with the DLQ's serializer_out (decoded by the
 * caller), or records (a records sink: one envelope each).
 */
export interface DlqItem {
  /** Where it is stored (file, object key, topic/partition/offset, row number, stream id): shown, never parsed. */
  location: string;
  payload?: Buffer;
  records?: Rec[];
}

export interface DlqReader {
  /** Its items carry records (table rows): the DLQ's serializer_out does not apply. Else payloads. */
  rows?: boolean;
  read(): AsyncIterable<DlqItem>;
  close?(): Promise<void>;
}

export type AnyPlugin = SourcePlugin | SinkPlugin | SerializerPlugin | TransformPlugin;

// The define* helpers keep each plugin module's config type flowing into its factory.
export const defineSource = <S extends TObject>(p: Omit<SourcePlugin<S>, 'kind'>): SourcePlugin<S> => ({ kind: 'source', ...p });
export const defineSink = <S extends TObject>(p: Omit<SinkPlugin<S>, 'kind'>): SinkPlugin<S> => ({ kind: 'sink', ...p });
export const defineSerializer = <S extends TObject>(p: Omit<SerializerPlugin<S>, 'kind'>): SerializerPlugin<S> => ({ kind: 'serializer', ...p });
export const defineTransform = <S extends TObject>(p: Omit<TransformPlugin<S>, 'kind'>): TransformPlugin<S> => ({ kind: 'transform', ...p });
