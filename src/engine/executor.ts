// Runs chunk processing inline (thread_workers: 1) or on a pool of worker threads. Only bytes and
// plain results cross threads; each worker compiles the pipeline once from its config.
import { Piscina } from 'piscina';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { processChunk, type ChunkInput, type ChunkOutput } from './process-chunk.js';
import type { ChunkPlan } from './plan.js';

export interface ChunkExecutor {
  run(input: ChunkInput): Promise<ChunkOutput>;
  close(): Promise<void>;
}

export function inlineExecutor(plan: ChunkPlan): ChunkExecutor {
  return {
    run: async (input) => processChunk(plan, input, { keepRecords: true }),
    close: async () => {},
  };
}

// Running from TypeScript sources (tests, `npm run svc`) the worker needs tsx to load .ts files.
const here = new URL(import.meta.url);
const fromSource = here.pathname.endsWith('.ts');
const workerFile = new URL(fromSource ? './chunk-worker.ts' : './chunk-worker.js', here);

export function poolExecutor(config: PipelineConfig, threads: number, wantsRecords: boolean[]): ChunkExecutor {
  const pool = new Piscina({
    filename: workerFile.href,
    minThreads: threads,
    maxThreads: threads,
    // Rule 3: at most 2 x thread_workers chunks in flight; the runner enforces it, this is a backstop.
    maxQueue: threads * 2,
    idleTimeout: 30_000,
    workerData: { config, wantsRecords },
    execArgv: fromSource ? [...process.execArgv, '--import', 'tsx'] : process.execArgv,
  });
  return {
    run: (input) => {
      // An exact-size copy, moved to the worker: a view into a larger read buffer would make
      // structured clone copy that whole buffer. The caller keeps `input` (DLQ re-processing).
      const data = new Uint8Array(input.data);
      return pool.run({ ...input, data }, { transferList: [data.buffer] }) as Promise<ChunkOutput>;
    },
    close: () => pool.destroy(),
  };
}
