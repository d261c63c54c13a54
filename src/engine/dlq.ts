// The dead-letter queue: failed records wrapped in the envelope of spec doc 3 and written to the
// pipeline's `dlq` sink, with that sink's own retries. A DLQ that cannot be written is logged and
// swallowed (rule 2); the runner then keeps the input in place so nothing is lost.
import { WriteError } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import type { Encoder, Rec, Sink, SinkRunInfo, SourceMeta } from '../plugins/types.js';
import type { SinkConfig } from '../config/pipeline-schema.js';
import { CircuitBreaker, guardedWrite } from './reliability.js';

export type Stage = 'parse' | 'transform' | 'sink';

export interface Envelope {
  _error: string;
  _stage: Stage;
  _pipeline: string;
  _run_id: string;
  _timestamp: string;
  /** The record; null at the parse stage, where there is none yet. */
  record: Rec | null;
  /** Base64 of the raw input; only at the parse stage. */
  raw: string | null;
}

/** A sink with everything the runtime needs around it: the pipeline's sinks and its dead-letter sink alike. */
export interface SinkSlot {
  label: string;
  cfg: SinkConfig;
  sink: Sink;
  encoder: Encoder;
  breaker: CircuitBreaker;
  /** The sink declares `accepts: 'records'`: it is handed the records, no encoded payload. */
  takesRecords: boolean;
}

export class DeadLetterQueue {
  constructor(
    readonly slot: SinkSlot,
    private readonly ctx: { pipeline: string; runId: string; log: Logger; signal: AbortSignal; redact?: (text: string) => string },
  ) {}

  open(info: SinkRunInfo) {
    return this.slot.sink.open?.(info);
  }

  envelope(stage: Stage, error: string, record: Rec | null, raw?: Uint8Array): Envelope {
    return {
      // The reason may quote the config (a URL, a path): its secrets are masked. The record is the user's data and stays as it is.
      _error: this.ctx.redact ? this.ctx.redact(error) : error,
      _stage: stage,
      _pipeline: this.ctx.pipeline,
      _run_id: this.ctx.runId,
      _timestamp: new Date().toISOString(),
      record: stage === 'parse' ? null : record,
      raw: stage === 'parse' && raw ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64') : null,
    };
  }

  /** Writes envelopes; false when they could not be written (already logged). */
  async send(envelopes: Envelope[], meta: SourceMeta): Promise<boolean> {
    const { sink, encoder, takesRecords } = this.slot;
    const records = envelopes as unknown as Rec[];
    const payload = takesRecords ? Buffer.alloc(0) : Buffer.from(encoder.body(records));
    const head = takesRecords ? '' : encoder.head(records);
    const outcome = await guardedWrite(
      async () => {
        const r = await sink.write({ payload, head, count: records.length, records, meta, first: records[0] });
        // A dead-letter sink that refuses some envelopes has not kept them: the write as a whole failed.
        const refused = [...(r?.rejected ?? []), ...(r?.retry ?? [])];
        if (refused.length) throw new WriteError(`${refused.length} of ${records.length} envelopes refused: ${refused[0]!.reason}`, !r?.rejected?.length);
      },
      { label: this.slot.label, policy: this.slot.cfg, breaker: this.slot.breaker, signal: this.ctx.signal, log: this.ctx.log },
    );
    if (!outcome.ok) this.ctx.log.error({ dlq: this.slot.label, records: envelopes.length, err: outcome.reason }, 'dead-letter write failed');
    return outcome.ok;
  }
}
