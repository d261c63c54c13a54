// Worker-thread entry: builds the chunk plan once from the pipeline config (loading only the
// serializers and transforms it names), then processes chunks.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { ModuleImporter } from '../plugins/loader.js';
import { buildPlan, type ChunkPlan } from './plan.js';
import { processChunk, type ChunkInput } from './process-chunk.js';
import { WORKER_READY } from './chunk-worker-ready.js';
import { workerRegistry } from './worker-registry.js';

const { config, wantsRecords, schemaDir, countStages } = workerData as {
  config: PipelineConfig;
  wantsRecords: boolean[];
  schemaDir?: string;
  countStages: boolean;
};

// From TypeScript sources (tests, `npm run svc`) Piscina loads this file through tsx's require hook:
// Node 20 does not apply tsx's import hooks in worker threads, so plugins are required too.
const fromSource = typeof require === 'function';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- tsx's require hook is the only loader that reaches TypeScript sources in a worker thread (see above)
const load: ModuleImporter = fromSource ? async (url) => require(fileURLToPath(url)) as unknown : (url) => import(url.href);

let plan: ChunkPlan | undefined;
const planned = workerRegistry(config, load).then((registry) => {
  plan = buildPlan(config, { wantsRecords, registry, schemaDir, countStages });
  // The pool's executor sends chunks here only from now on (src/engine/executor.ts).
  parentPort?.postMessage({ ready: WORKER_READY, threadId });
  return plan;
});

export default async function processInWorker(input: ChunkInput) {
  const p = plan ?? (await planned);
  // Records stay here unless a sink takes records: a failed write is re-processed on the main thread.
  // From the first transform that holds records on, the chain runs on the main thread, in order.
  const out = processChunk(p, input, { keepRecords: false, stopAt: p.mainFrom });
  // Payloads move to the main thread instead of being copied (each owns its whole ArrayBuffer).
  const buffers = new Set<ArrayBuffer>();
  for (const s of out.sinks) {
    for (const b of [s.payload, s.origins])
      if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.byteLength > 0) buffers.add(b.buffer as ArrayBuffer);
  }
  return Piscina.move({ [Piscina.transferableSymbol]: [...buffers], [Piscina.valueSymbol]: out } as never);
}
