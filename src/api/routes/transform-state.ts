// Spec doc 2 "Transform state": read and replace the durable state of a pipeline's stateful
// transforms. 404 when SVC_STATEFUL_TRANSFORMS=0; bodies over SVC_STATE_MAX_BYTES are 413.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { stateConfigHash, statefulInstances, statefulTransforms } from '../../engine/transform-state.js';
import { registry } from '../../plugins/registry.js';
import type { TransformPlugin } from '../../plugins/types.js';
import type { PipelineConfig } from '../../config/pipeline-schema.js';
import type { StoredTargetState } from '../../store/types.js';
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
      const state = stored && stored.config_sha256 === hash ? stored.state : {};
      // A sharded pipeline keeps its state by target (issue 33): shown joined per transform, as
      // one run over the whole fleet would hold it.
      const byTarget = store.transformState.ofTargets ? await store.transformState.ofTargets(p.name) : [];
      return { pipeline: p.name, state: { ...state, ...joinTargetStates(p.config, byTarget, hash) }, config_sha256: hash };
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

  // A shard of a sharded batch run (issue 33) reads and writes the state of the targets it owns,
  // named by its run id (`<run>-s<index>`): the manager takes the targets from the shard's row, so
  // a worker can neither read nor overwrite another shard's targets, and a shard given up (lost,
  // its targets re-dispatched) can no longer write at all.
  const shardOf = async (req: Req) => {
    enabled();
    const p = manager.get(req.params.pipeline);
    const runId = req.headers[RUN_ID_HEADER];
    const m = typeof runId === 'string' ? /^(.+)-s(\d+)$/.exec(runId) : null;
    if (!m || !store.runShards || !store.transformState.ofTargets || !store.transformState.putTargets)
      throw httpError('HTTP_SHARDS_NOT_FOUND', `no shard of a sharded run of '${p.name}' is named (header ${RUN_ID_HEADER}: <run>-s<index>)`);
    const row = (await store.runShards.ofRun(m[1]!)).find((r) => r.shard_index === Number(m[2]) && r.pipeline === p.name);
    if (!row) throw httpError('HTTP_RUN_NOT_FOUND', runId);
    if (row.status !== 'running') throw httpError('HTTP_RUN_SUPERSEDED', runId, `its shard is ${row.status}`);
    return {
      p,
      row,
      instances: targetStateInstances(p.config),
      hash: stateConfigHash(p.config),
      ofTargets: store.transformState.ofTargets,
      putTargets: store.transformState.putTargets,
    };
  };

  app.get(
    '/api/internal/transform-state/:pipeline/shard',
    {
      schema: {
        tags,
        params: Params,
        response: { 200: StateBody },
        summary: "A shard's transform state: that of the targets it owns, joined per transform (header x-svc-run-id names the shard)",
      },
    },
    async (req: Req) => {
      const s = await shardOf(req);
      const rows = await s.ofTargets.call(store.transformState, s.p.name, s.row.targets);
      return { pipeline: s.p.name, state: joinTargetStates(s.p.config, rows, s.hash), config_sha256: s.hash };
    },
  );

  app.put(
    '/api/internal/transform-state/:pipeline/shard',
    {
      bodyLimit: settings.STATE_MAX_BYTES,
      schema: {
        tags,
        params: Params,
        body: StateBody,
        response: { 200: Type.Object({ pipeline: Type.String(), targets: Type.Integer(), unplaced: Type.Integer() }) },
        summary:
          "Replace a shard's transform state: each transform's state is split by target and stored for the shard's own targets (409 once the shard is given up)",
      },
    },
    async (req: Req) => {
      const s = await shardOf(req);
      const body = req.body as { state: Record<string, unknown>; config_sha256: string };
      if (body.config_sha256 !== s.hash)
        throw httpError('HTTP_PIPELINE_CONFLICT', `pipeline '${s.p.name}' changed its stateful transforms during the run; the shard's state is not kept`);
      const owned = new Set(s.row.targets);
      const parts = new Map<string, Map<string, unknown>>();
      let unplaced = 0;
      for (const { key, plugin } of s.instances) {
        if (body.state[key] === undefined || !plugin.targetState) continue;
        const byTarget = plugin.targetState.split(body.state[key]);
        // State of a target this shard does not own (none, or another shard's) is not written.
        for (const t of byTarget.keys())
          if (!owned.has(t)) {
            byTarget.delete(t);
            unplaced++;
          }
        parts.set(key, byTarget);
      }
      await s.putTargets.call(store.transformState, s.p.name, s.row.targets, parts, s.hash);
      return { pipeline: s.p.name, targets: s.row.targets.length, unplaced };
    },
  );
}

/** Each stateful transform instance of the pipeline, with its plugin's split and join of state by target. */
function targetStateInstances(config: PipelineConfig) {
  return statefulTransforms(config).map((t) => ({ key: t.key, plugin: registry.transform.get(t.config.type) as TransformPlugin }));
}

/** By-target state rows joined per transform instance; a row made under other transforms is as good as none (the run would discard it). */
function joinTargetStates(config: PipelineConfig, rows: readonly StoredTargetState[], hash: string): Record<string, unknown> {
  const state: Record<string, unknown> = {};
  if (rows.length === 0) return state;
  for (const { key, plugin } of targetStateInstances(config)) {
    const parts = rows.filter((r) => r.transform_key === key && r.config_sha256 === hash).map((r) => r.state);
    if (parts.length && plugin.targetState) state[key] = plugin.targetState.join(parts);
  }
  return state;
}
