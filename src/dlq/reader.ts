// Reads a pipeline's DLQ back through its sink's dlqReader (docs/dead-letters.md): payloads are
// decoded with the DLQ's serializer_out, rows taken as they are; each envelope gets its id. The
// read is bounded: a sink's reader stops at what existed when it started, and at most `max`
// envelopes of this pipeline are kept (the listing says it was truncated); another pipeline's,
// in a DLQ sink they share, are passed over.
import { Value } from '@sinclair/typebox/value';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { Registry } from '../config/load.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import { redactor, secretsOf } from '../core/secrets.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import type { Decoder, Rec, SerializerPlugin, SinkPlugin } from '../plugins/types.js';
import { readSetting } from '../settings.js';
import { asEnvelope, IdAssigner, type DlqEntry } from './envelope.js';

/** The DLQ cannot be read back (no DLQ, a sink without a reader, a serializer that is not JSON): HTTP 409. */
export class DlqUnreadable extends Error {}

/** The DLQ sink's peer failed the read (down, refused, a wrong table): HTTP 502. */
export class DlqReadFailed extends Error {}

/** Envelopes kept by one read at most. */
export const MAX_ENVELOPES = 100_000;

/** The DLQ's serializers that decode back to whole envelopes. */
const ENVELOPE_SERIALIZERS = ['ndjson', 'json'];

export interface DlqRead {
  entries: DlqEntry[];
  /** More envelopes were stored than `max`: the oldest-read `max` are listed. */
  truncated: boolean;
  /** Stored items that were not envelopes: how many, and each reason once ("... (xN)"). */
  skipped: number;
  unreadable: string[];
}

/** Sink types whose definition can read a DLQ back, for the 409 message. */
export function readableTypes(reg: Registry = defaultRegistry): string[] {
  return [...reg.sink.values()]
    .filter((p) => (p as SinkPlugin).dlqReader)
    .map((p) => p.key)
    .sort();
}

function decoderOf(config: PipelineConfig, reg: Registry): Decoder {
  const ser = config.dlq!.serializer_out ?? { type: 'ndjson' };
  if (!ENVELOPE_SERIALIZERS.includes(ser.type)) {
    throw new DlqUnreadable(
      `the DLQ of pipeline '${config.name}' is written with serializer_out '${ser.type}', which does not keep envelopes whole; ` +
        `only ${ENVELOPE_SERIALIZERS.join(' and ')} can be read back (ndjson is the default)`,
    );
  }
  const p = reg.serializer.get(ser.type) as SerializerPlugin;
  return p.decoder!(Value.Default(p.config, { ...ser }) as never, { schemaDir: readSetting('SCHEMA_DIR') });
}

export async function readDlq(config: PipelineConfig, opts: { log: Logger; signal: AbortSignal; registry?: Registry; max?: number }): Promise<DlqRead> {
  const reg = opts.registry ?? defaultRegistry;
  const max = opts.max ?? MAX_ENVELOPES;
  if (!config.dlq) throw new DlqUnreadable(`pipeline '${config.name}' has no dlq sink`);
  const plugin = reg.sink.get(config.dlq.type) as SinkPlugin | undefined;
  if (!plugin?.dlqReader) {
    throw new DlqUnreadable(
      `the DLQ of pipeline '${config.name}' is a '${config.dlq.type}' sink, which svc cannot read back (it hands records to a peer ` +
        `that does not keep them for reading, or has no reader yet); DLQ sinks that can be read: ${readableTypes(reg).join(', ')}`,
    );
  }
  const reader = plugin.dlqReader(config.dlq as never, { pipeline: config.name, log: opts.log, signal: opts.signal });
  const decoder = reader.rows ? undefined : decoderOf(config, reg);
  const entries: DlqEntry[] = [];
  const ids = new IdAssigner();
  const bad = new Map<string, number>();
  let truncated = false;
  const skip = (why: string) => bad.set(why, (bad.get(why) ?? 0) + 1);
  const take = (r: Rec, location: string) => {
    const e = asEnvelope(r);
    if (typeof e === 'string') return skip(e);
    // A DLQ sink shared by several pipelines holds theirs too: they neither fill `max` nor are listed.
    if (e._pipeline !== config.name) return;
    if (entries.length >= max) truncated = true;
    else entries.push({ id: ids.next(e), location, envelope: e });
  };
  try {
    for await (const item of reader.read()) {
      if (opts.signal.aborted) throw new Error('the DLQ read was stopped (time out or client gone)');
      for (const r of item.records ?? []) take(r, item.location);
      if (item.payload && decoder) {
        const records: Rec[] = [];
        decoder.decode(
          { data: item.payload, firstLine: 1 },
          {
            record: (r) => records.push(r),
            error: (m) => skip(`not JSON (${m})`),
            note: () => {},
          },
        );
        // A file of many envelopes: `file#3` is its third; a message of one is its location alone.
        records.forEach((r, n) => take(r, records.length > 1 ? `${item.location}#${n + 1}` : item.location));
      }
      if (truncated) break;
    }
  } catch (e) {
    if (e instanceof DlqUnreadable) throw e;
    const redact = redactor(secretsOf(plugin.config, config.dlq));
    throw new DlqReadFailed(`reading the DLQ of pipeline '${config.name}' (${config.dlq.type}) failed: ${redact(errorMessage(e))}`, { cause: e });
  } finally {
    await reader.close?.().catch(() => {});
  }
  // Oldest first whatever order the store gave (partitions interleave): pages of a listing stay put.
  entries.sort((a, b) => a.envelope._timestamp.localeCompare(b.envelope._timestamp) || a.location.localeCompare(b.location, 'en', { numeric: true }));
  const skipped = [...bad.values()].reduce((a, b) => a + b, 0);
  if (skipped) opts.log.warn({ pipeline: config.name, skipped, reasons: [...bad.keys()] }, 'DLQ items that are not envelopes skipped');
  return { entries, truncated, skipped, unreadable: [...bad].map(([m, n]) => (n > 1 ? `${m} (x${n})` : m)) };
}
