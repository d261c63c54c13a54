// Runs chunk processing inline (thread_workers: 1) or shared between this thread and a pool of
// worker threads. Only bytes and plain results cross threads; each worker compiles the pipeline
// once from its config.
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { processChunk, type ChunkInput, type ChunkOutput } from './process-chunk.js';
import type { ChunkPlan } from './plan.js';
import { WORKER_READY } from './chunk-worker-ready.js';

export interface ChunkExecutor {
  run(input: ChunkInput): Promise<ChunkOutput>;
  close(): Promise<void>;
  /** The worker threads (thread_workers > 1), for tests. */
  threads?(): Worker[];
}

export function inlineExecutor(plan: ChunkPlan, onMessage?: (index: number) => void): ChunkExecutor {
  return {
    run: async (input) => processChunk(plan, input, { keepRecords: true, onMessage }),
    close: async () => {},
  };
}

// Running from TypeScript sources (tests, `npm run svc`) the worker needs tsx to load .ts files.
const here = new URL(import.meta.url);
const fromSource = here.pathname.endsWith('.ts');
const workerFile = new URL(fromSource ? './chunk-worker.ts' : './chunk-worker.js', here);

/** Heap of a chunk worker thread: far above what a chunk of 512 KiB (or one message) can need. */
const WORKER_HEAP_MB = 2048;

/** Chunks a worker holds (one running, one waiting) before this thread takes one: a worker never idles while the main thread reads, writes or processes. */
const WORKER_QUEUE = 2;

/**
 * `thread_workers: N > 1`: N - 1 worker threads, and this thread as the N-th processor. A chunk goes
 * to a worker that has started and has room (WORKER_QUEUE), else it is processed here at once. So a run never
 * waits for workers to boot (they load the plugins first), and on N cores the main thread's reading
 * and writing does not compete with N busy workers: measured on 2 cores, N workers plus an I/O-only
 * main thread ran 2 threads barely faster than 1 (docs/benchmarks.md).
 */
export function sharedExecutor(plan: ChunkPlan, config: PipelineConfig, threads: number, onMessage?: (index: number) => void): ChunkExecutor {
  const workers = threads - 1;
  const pool = new Piscina({
    filename: workerFile.href,
    minThreads: workers,
    maxThreads: workers,
    // Rule 3: at most 2 x thread_workers chunks in flight; the runner enforces it, this is a backstop.
    maxQueue: threads * 2,
    idleTimeout: 30_000,
    workerData: { config, wantsRecords: plan.sinks.map((s) => s.wantsRecords), schemaDir: plan.schemaDir, countStages: plan.countStages },
    execArgv: fromSource ? [...process.execArgv, '--import', 'tsx'] : process.execArgv,
    // A chunk that runs a worker's heap out ends that worker only (ERR_WORKER_OUT_OF_MEMORY), not
    // the process: the runner dead-letters it as `crashed the decoder`.
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    // An idle worker waits in Atomics.wait by default, which also stops its event loop: the plan
    // that loads asynchronously at start (src/engine/chunk-worker.ts) would never finish.
    atomics: 'disabled',
  });
  // Piscina counts a worker ready before its module has loaded; the worker says so itself (with
  // its thread id). A worker that died is not counted (its thread id is -1, and the pool drops it):
  // until its replacement has loaded, chunks are processed here rather than queued for it.
  const loaded = new Set<number>();
  pool.on('message', (m: unknown) => {
    if (typeof m === 'object' && m !== null && (m as { ready?: unknown }).ready === WORKER_READY) loaded.add((m as { threadId: number }).threadId);
  });
  const ready = () => (loaded.size === 0 ? 0 : pool.threads.filter((w) => loaded.has(w.threadId)).length);
  let busy = 0;
  const inline = (input: ChunkInput) => processChunk(plan, input, { keepRecords: true, stopAt: plan.mainFrom, onMessage });
  return {
    threads: () => pool.threads,
    run: (input) => {
      if (busy >= ready() * WORKER_QUEUE) return Promise.resolve(inline(input));
      busy++;
      // An exact-size copy, moved to the worker: a view into a larger read buffer would make
      // structured clone copy that whole buffer. The caller keeps `input` (DLQ re-processing).
      const data = new Uint8Array(input.data);
      const messages = input.messages?.map((m) => new Uint8Array(m));
      const transfer = [data.buffer, ...(messages ?? []).map((m) => m.buffer)];
      const done = pool.run({ ...input, data, messages }, { transferList: transfer }) as Promise<ChunkOutput>;
      return done.finally(() => busy--);
    },
    close: () => pool.destroy(),
  };
}
