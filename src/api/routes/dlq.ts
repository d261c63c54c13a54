// A pipeline's dead letters (docs/dead-letters.md): GET /api/pipelines/{name}/dlq lists what its
// DLQ sink holds (filters, replay marks, limit/offset like GET /api/runs; X-Total-Count), POST
// .../dlq/replay re-injects a selection where it failed, as a run of its own.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { ExprError } from '../../expr/index.js';
import { DlqReadFailed, DlqUnreadable } from '../../dlq/reader.js';
import { listDlq, replayDlq } from '../../dlq/service.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

const NameParams = Type.Object({ name: Type.String({ minLength: 1 }) });

const filters = {
  stage: Type.Optional(Type.Union([Type.Literal('parse'), Type.Literal('transform'), Type.Literal('sink')], { description: 'Stage the record failed at' })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601 lower bound on _timestamp (inclusive)' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601 upper bound on _timestamp (exclusive)' })),
  error: Type.Optional(Type.String({ minLength: 1, description: 'Case-insensitive text the _error contains' })),
  run_id: Type.Optional(Type.String({ minLength: 1, description: 'The run that dead-lettered it' })),
};

const ListQuery = Type.Object(
  {
    ...filters,
    replayed: Type.Optional(Type.Boolean({ description: 'Only envelopes marked replayed (true) or not (false)' })),
    limit: Type.Integer({ minimum: 1, maximum: 10000, default: 100 }),
    offset: Type.Integer({ minimum: 0, default: 0 }),
  },
  { additionalProperties: false },
);

const PatchOp = Type.Object(
  {
    op: Type.Union(['add', 'remove', 'replace', 'move', 'copy', 'test'].map((o) => Type.Literal(o))),
    path: Type.String(),
    value: Type.Optional(Type.Unknown()),
    from: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const ReplayBody = Type.Object(
  {
    ...filters,
    ids: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 10000, description: 'Envelope ids from the listing' })),
    force: Type.Boolean({ default: false, description: 'Replay envelopes marked replayed already too' }),
    patch: Type.Optional(Type.Array(PatchOp, { description: 'RFC 6902 JSON Patch applied to each selected record' })),
    set: Type.Optional(
      Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }), {
        description: 'Field -> expression (after patch), evaluated against the record; `record` is the whole record',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The DLQ errors with their HTTP status: cannot be read back 409, its peer failed the read 502, a bad edit 422. */
function mapped(e: unknown): unknown {
  if (e instanceof DlqUnreadable) return httpError('HTTP_DLQ_UNREADABLE', e.message);
  if (e instanceof DlqReadFailed) return httpError('HTTP_DLQ_READ_FAILED', e.message);
  if (e instanceof ExprError) return httpError('HTTP_DLQ_EXPRESSION_INVALID', e.message);
  return e;
}

export default async function dlqRoutes(app: FastifyInstance, deps: ApiDeps) {
  const tags = ['dead letters'];
  const dlq = { manager: deps.manager, marks: deps.store.dlqReplayed, log: deps.log };

  app.get(
    '/api/pipelines/:name/dlq',
    {
      schema: {
        tags,
        params: NameParams,
        querystring: ListQuery,
        summary: "The pipeline's dead letters, oldest first, with their ids and replay marks (X-Total-Count)",
      },
    },
    async (req: FastifyRequest<{ Params: { name: string }; Querystring: Static<typeof ListQuery> }>, reply) => {
      const r = await listDlq(dlq, req.params.name, req.query).catch((e: unknown) => Promise.reject(mapped(e)));
      reply.header('x-total-count', String(r.total));
      if (r.truncated) reply.header('x-dlq-truncated', 'true');
      if (r.skipped) reply.header('x-dlq-skipped', String(r.skipped)); // stored items that are not envelopes (logged with their reasons)
      return r.items;
    },
  );

  app.post(
    '/api/pipelines/:name/dlq/replay',
    {
      schema: {
        tags,
        params: NameParams,
        body: ReplayBody,
        summary: 'Replay selected dead letters where they failed, as a run of their own; answers when the run has finished',
      },
    },
    async (req: FastifyRequest<{ Params: { name: string }; Body: Static<typeof ReplayBody> }>) =>
      replayDlq(dlq, req.params.name, req.body as never).catch((e: unknown) => Promise.reject(mapped(e))),
  );
}
