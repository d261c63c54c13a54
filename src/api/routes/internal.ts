// The manager's internal surface for workers (spec doc 2): run-complete (the outcome of a run,
// stored once) and pipeline-stats (periodic progress; the final report of a batch has is_final
// true and comes before its run-complete). SVC_INTERNAL_AUTH_MODE applies (src/auth/guard.ts).
// Not a manager: 404, so a worker pointed at the wrong node says so.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { runRecordOf, type RunComplete, type StatsReport } from '../../cluster/protocol.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

const tags = ['internal'];
const count = Type.Integer({ minimum: 0 });
const RunCompleteBody = Type.Object(
  {
    run_id: Type.String({ minLength: 1 }),
    pipeline: Type.String({ minLength: 1 }),
    node_id: Type.String(),
    status: Type.Union([Type.Literal('success'), Type.Literal('failed'), Type.Literal('aborted')]),
    started_at: Type.String(),
    finished_at: Type.String(),
    records_in: count,
    records_out: count,
    // Optional: a worker of an earlier release does not send it (stored as 0).
    records_filtered: Type.Optional(count),
    records_skipped: count,
    bytes_in: count,
    bytes_out: count,
    dlq_count: count,
    // Null first: the API coerces types, and a string-first union would turn null into "".
    error: Type.Union([Type.Null(), Type.String()]),
    errors: Type.Array(Type.String()),
    worker_id: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
const StatsBody = Type.Object(
  {
    run_id: Type.String({ minLength: 1 }),
    pipeline: Type.String({ minLength: 1 }),
    records_in: count,
    records_out: count,
    records_filtered: Type.Optional(count),
    records_skipped: count,
    dlq_count: count,
    bytes_in: count,
    bytes_out: count,
    is_final: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);

export default async function internalRoutes(app: FastifyInstance, deps: ApiDeps) {
  const cluster = () => {
    if (!deps.cluster)
      throw httpError(
        'HTTP_NOT_A_MANAGER',
        `this node runs SVC_MODE=${deps.settings.MODE}: only a manager takes worker callbacks (check SVC_MANAGER_URL on the worker)`,
      );
    return deps.cluster;
  };

  app.post(
    '/api/internal/run-complete',
    { schema: { tags, body: RunCompleteBody, summary: "A worker's run outcome; stored once however often it is sent" } },
    async (req) => {
      const body = req.body as RunComplete;
      // A shard's outcome is its shard's (run_shards), never a run of its own.
      if (body.shard) return { run_id: body.run_id, stored: (await cluster().executor.completeShard(body)) === 'resolved' };
      const outcome = cluster().executor.complete(body);
      if (outcome === 'unknown') {
        // No run of this process waits for it (the manager restarted since): stored if not stored yet.
        const stored = await deps.manager.recordRemoteOutcome(runRecordOf(body));
        return { run_id: body.run_id, stored };
      }
      return { run_id: body.run_id, stored: outcome === 'resolved' };
    },
  );

  app.post('/api/internal/pipeline-stats', { schema: { tags, body: StatsBody, summary: "A worker's progress report of one run" } }, async (req) => {
    const body = req.body as StatsReport;
    if (cluster().executor.stats(body)) return { run_id: body.run_id, accepted: true };
    // A manager still loading its pipelines (just started, or just elected) cannot judge a run yet.
    if (!cluster().leader().ready) return { run_id: body.run_id, accepted: true };
    // Not a run this process waits for. It is superseded (409: the worker stops it) when the
    // pipeline is gone or another run of it is current; otherwise it is one a previous manager
    // process placed, and it runs on (its run-complete is stored once).
    const current = deps.manager.has(body.pipeline) ? deps.manager.get(body.pipeline).active?.runId : undefined;
    if (!deps.manager.has(body.pipeline) || (current !== undefined && current !== body.run_id)) {
      const why = !deps.manager.has(body.pipeline)
        ? `pipeline '${body.pipeline}' is not registered`
        : `run '${current}' is the current run of '${body.pipeline}'`;
      throw httpError('HTTP_RUN_SUPERSEDED', body.run_id, why);
    }
    return { run_id: body.run_id, accepted: true };
  });

  // The `skip_processed` memory of file sources, one for every worker (src/cluster/internal-http.ts
  // managerProcessedFiles): asked before a file is read, told (through the outbox) once it is done.
  const Processed = { params: Type.Object({ pipeline: Type.String({ minLength: 1 }) }) };
  type ProcessedReq = { params: { pipeline: string } };
  app.get(
    '/api/internal/processed/:pipeline',
    {
      schema: {
        tags,
        ...Processed,
        querystring: Type.Object({ key: Type.String({ minLength: 1 }) }),
        summary: "Whether a worker's file source processed this key already (any worker)",
      },
    },
    async (req) => {
      cluster();
      const { pipeline } = (req as ProcessedReq).params;
      return { pipeline, processed: await deps.store.processed.has(pipeline, (req.query as { key: string }).key) };
    },
  );
  app.post(
    '/api/internal/processed/:pipeline',
    {
      schema: {
        tags,
        ...Processed,
        body: Type.Object({ key: Type.String({ minLength: 1 }) }),
        summary: 'A worker processed this key: no worker reads it again',
      },
    },
    async (req) => {
      cluster();
      const { pipeline } = (req as ProcessedReq).params;
      await deps.store.processed.add(pipeline, (req.body as { key: string }).key);
      return { pipeline, remembered: true };
    },
  );
}
