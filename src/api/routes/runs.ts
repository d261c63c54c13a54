// Run history: GET /api/runs (filters, pagination, CSV) and GET /api/runs/{run_id}.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { stringify } from 'csv-stringify/sync';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';
import { withLive } from '../../pipelines/pipeline-manager.js';

const RunsQuery = Type.Object(
  {
    pipeline: Type.Optional(Type.String({ minLength: 1 })),
    limit: Type.Integer({ minimum: 1, maximum: 10000, default: 100 }),
    offset: Type.Integer({ minimum: 0, default: 0 }),
    status: Type.Optional(Type.Union([Type.Literal('success'), Type.Literal('failed'), Type.Literal('aborted'), Type.Literal('running')])),
    from_dt: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601 lower bound on started_at' })),
    format: Type.Optional(Type.Literal('csv')),
  },
  { additionalProperties: false },
);

const COLUMNS = [
  'run_id',
  'pipeline',
  'node_id',
  'status',
  'started_at',
  'finished_at',
  'records_in',
  'records_out',
  'records_filtered',
  'records_skipped',
  'bytes_in',
  'bytes_out',
  'dlq_count',
  'error',
  'errors',
  'pipeline_version',
];

export default async function runRoutes(app: FastifyInstance, deps: ApiDeps) {
  const tags = ['runs'];
  app.get(
    '/api/runs',
    { schema: { tags, querystring: RunsQuery, summary: 'Run records, newest first; format=csv for text/csv' } },
    async (req: FastifyRequest<{ Querystring: Static<typeof RunsQuery> }>, reply) => {
      const q = req.query;
      const from = q.from_dt ? new Date(q.from_dt) : undefined;
      if (from && Number.isNaN(from.getTime())) throw httpError('HTTP_INVALID', `from_dt '${q.from_dt}' is not an ISO 8601 date-time`);
      // A running run shows its live counters (issue 29), laid over what the store holds.
      const runs = (await deps.store.runs.list({ pipeline: q.pipeline, status: q.status, from_dt: from?.toISOString(), limit: q.limit, offset: q.offset })).map(
        (r) => withLive(r, deps.manager.liveRun(r.run_id)),
      );
      if (q.format !== 'csv') return runs;
      const rows = runs.map((r) => COLUMNS.map((c) => (c === 'errors' ? JSON.stringify(r.errors) : ((r as Record<string, unknown>)[c] ?? ''))));
      return reply.type('text/csv; charset=utf-8').send(stringify([COLUMNS, ...rows]));
    },
  );

  app.get(
    '/api/runs/:run_id',
    {
      schema: {
        tags,
        params: Type.Object({ run_id: Type.String({ minLength: 1 }) }),
        querystring: Type.Object(
          { targets: Type.Boolean({ default: false, description: "A sharded run: list each shard's targets too (its missed targets are always listed)." }) },
          { additionalProperties: false },
        ),
      },
    },
    async (req: FastifyRequest<{ Params: { run_id: string }; Querystring: { targets: boolean } }>) => {
      const run = await deps.store.runs.get(req.params.run_id);
      if (!run) throw httpError('HTTP_RUN_NOT_FOUND', req.params.run_id);
      // A sharded batch run (issue 33): one row per shard, its worker, targets and outcome.
      const shards = (await deps.store.runShards?.ofRun(run.run_id)) ?? [];
      const out = withLive(run, deps.manager.liveRun(run.run_id));
      if (!shards.length) return out;
      return {
        ...out,
        shards: shards.map(({ run_id: _r, pipeline: _p, targets, ...s }) => ({
          ...s,
          target_count: targets.length,
          ...(req.query.targets ? { targets } : {}),
        })),
      };
    },
  );
}
