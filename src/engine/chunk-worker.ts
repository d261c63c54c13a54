// Worker-thread entry: builds the chunk plan once from the pipeline config, then processes chunks.
import { workerData } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { buildPlan } from './plan.js';
import { processChunk, type ChunkInput } from './process-chunk.js';

const { config, wantsRecords } = workerData as { config: PipelineConfig; wantsRecords: boolean[] };
const plan = buildPlan(config, { wantsRecords });

export default function processInWorker(input: ChunkInput) {
  // Records stay here unless a sink takes records: a failed write is re-processed on the main thread.
  // From the first transform that holds records on, the chain runs on the main thread, in order.
  const out = processChunk(plan, input, { keepRecords: false, stopAt: plan.mainFrom });
  // Payloads move to the main thread instead of being copied (each owns its whole ArrayBuffer).
  const buffers = new Set<ArrayBuffer>();
  for (const s of out.sinks) {
    for (const b of [s.payload, s.origins]) if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.byteLength > 0) buffers.add(b.buffer as ArrayBuffer);
  }
  return Piscina.move({ [Piscina.transferableSymbol]: [...buffers], [Piscina.valueSymbol]: out } as never);
}
