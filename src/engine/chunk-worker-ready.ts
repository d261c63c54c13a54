/** What a chunk worker posts (as `{ready, threadId}`) once its plan is built (a module of its own: the worker imports no pool). */
export const WORKER_READY = 'svc-chunk-worker-ready';
