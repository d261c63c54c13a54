// Worker-thread entry: builds the chunk plan once from the pipeline config, then processes chunks.
import { workerData } from 'node:worker_threads';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { buildPlan } from './plan.js';
import { processChunk, type ChunkInput } from './process-chunk.js';

const { config, wantsRecords } = workerData as { config: PipelineConfig; wantsRecords: boolean[] };
const plan = buildPlan(config, { wantsRecords });

export default function processInWorker(input: ChunkInput) {
  // Records stay here unless a sink takes records: a failed write is re-processed on the main thread.
  return processChunk(plan, input, { keepRecords: false });
}
