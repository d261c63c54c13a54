// Spec doc 2 "Transform state": read and replace the durable state of a pipeline's stateful
// transforms. 404 when SVC_STATEFUL_TRANSFORMS=0; bodies over SVC_STATE_MAX_BYTES are 413.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { stateConfigHash, statefulInstances } from '../../engine/transform-state.js';
import { errorMessage } from '../../core/errors.js';
import { RUN_ID_HEADER } from '../../cluster/internal-http.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

const tags = ['internal'];
const Params = Type.Object({ pipeline: Type.String() });
const StateBody = Type.Object(
  {
    pipeline: Type.String(),
    state: Type.Record(Type.String(), Type.Unknown(), { description: 'By transform instance (`transforms[N].<type>`), then by record identity.' }),
    config_sha256: Type.String({
      description: 'Hash of the stateful transforms the state belongs to; a stored state with another hash is discarded at the next run.',
    }),
  },
  { additionalProperties: true },
);

type Req = FastifyRequest<{ Params: { pipeline: string }; Body: unknown }>;

export default async function transformStateRoutes(app: FastifyInstance, deps: ApiDeps) {
  const { settings, store, manager } = deps;
  const enabled = () => {
    if (!settings.STATEFUL_TRANSFORMS)
      throw httpError('HTTP_TRANSFORMS_STATELESS', 'stateful transforms are disabled on this node (SVC_STATEFUL_TRANSFORMS=0)');
  };

  app.get(
    '/api/internal/transform-state/:pipeline',
    {
      schema: {
        tags,
        params: Params,
        response: { 200: StateBody },
        summary: "A pipeline's transform state ({} when none is stored or it belongs to another config)",
      },
    },
    async (req: Req) => {
      enabled();
      const p = manager.get(req.params.pipeline);
      const hash = stateConfigHash(p.config);
      const stored = await store.transformState.get(p.name);
      // A state made under other transforms is as good as none: the next run would discard it.
      return { pipeline: p.name, state: stored && stored.config_sha256 === hash ? stored.state : {}, config_sha256: hash };
    },
  );

  app.put(
    '/api/internal/transform-state/:pipeline',
    {
      bodyLimit: settings.STATE_MAX_BYTES,
      schema: {
        tags,
        params: Params,
        body: Type.Object({}, { additionalProperties: true, description: 'The GET shape ({state: {...}}), or the state object itself.' }),
        response: { 200: StateBody },
        summary: 'Replace the transform state (413 over SVC_STATE_MAX_BYTES; 409 while a run is in progress)',
      },
    },
    async (req: Req) => {
      enabled();
      const p = manager.get(req.params.pipeline);
      // The run in progress may write its own state back (a worker, at the end of a successful run).
      const fromRun = req.headers[RUN_ID_HEADER];
      if (p.active && fromRun !== p.active.runId)
        throw httpError('HTTP_PIPELINE_CONFLICT', `pipeline '${p.name}' has a run in progress; its end would overwrite the state. Stop it or wait, then retry`);
      const body = req.body as Record<string, unknown>;
      const state = (typeof body.state === 'object' && body.state !== null && !Array.isArray(body.state) ? body.state : body) as Record<string, unknown>;
      const instances = statefulInstances(p.config, deps.log);
      const keys = instances.map((t) => t.key);
      for (const k of Object.keys(state)) {
        if (!keys.includes(k))
          throw httpError(
            'HTTP_TRANSFORM_STATE_INVALID',
            `'${k}' is not a stateful transform of pipeline '${p.name}' (its instances: ${keys.join(', ') || 'none'})`,
          );
      }
      // Each part must load into a fresh instance of its transform: a body the run would discard is refused now.
      for (const { key, transform } of instances) {
        if (state[key] === undefined) continue;
        try {
          transform.state!.load(state[key]);
        } catch (e) {
          throw httpError('HTTP_TRANSFORM_STATE_INVALID', `state of ${key} is not usable: ${errorMessage(e)}`);
        }
      }
      const hash = stateConfigHash(p.config);
      await store.transformState.put(p.name, state, hash);
      return { pipeline: p.name, state, config_sha256: hash };
    },
  );
}
