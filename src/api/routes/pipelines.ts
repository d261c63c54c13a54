// Pipelines: CRUD, lifecycle (start, stop, run), reload, dry-run, versions and rollback.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { loadPipelineText, positionOf } from '../../config/load.js';
import { asWritten } from '../../config/interpolate.js';
import { formatDiagnostic, formatPath, inLineOrder, type Diagnostic } from '../../config/diagnostics.js';
import { buildPlan, encoderFor } from '../../engine/plan.js';
import { MemoryProcessedFiles } from '../../plugins/connector-runtime/processed-files.js';
import { silentLogger } from '../../observability/log.js';
import { registry } from '../../plugins/registry.js';
import type { SinkPlugin, SourcePlugin } from '../../plugins/types.js';
import { readSetting } from '../../settings.js';
import { pipelineLive, type Managed } from '../../pipelines/pipeline-manager.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

const NameParams = Type.Object({ name: Type.String({ minLength: 1 }) });
type NameReq = FastifyRequest<{ Params: { name: string } }>;

/** The body of create, update and dry-run: raw YAML text, or JSON `{yaml_text}`. */
export function yamlOf(req: FastifyRequest): string {
  const b = req.body as unknown;
  if (typeof b === 'string') return b;
  if (b && typeof b === 'object' && typeof (b as { yaml_text?: unknown }).yaml_text === 'string') return (b as { yaml_text: string }).yaml_text;
  if (b === undefined || b === null)
    throw httpError('HTTP_PIPELINE_INVALID', 'missing pipeline YAML: send it as text/plain or application/yaml, or JSON {"yaml_text": "..."}');
  throw httpError('HTTP_INVALID', 'JSON body must be {"yaml_text": "<pipeline YAML>"}');
}

/** A pipeline as the API shows it: its config as written, `${VAR}`s not expanded (issue 28); `live`: its active run's figures. */
export function pipelineState(p: Managed, live?: ReturnType<typeof pipelineLive>) {
  const config = asWritten(p.config);
  return {
    name: p.name,
    description: config.description ?? null,
    enabled: p.config.enabled,
    status: p.status,
    // What start and stop remembered (survives restarts); `enabled` is only a new pipeline's first state.
    desired: p.desired,
    error: p.error ?? null,
    schedule_type: p.config.schedule.type,
    schedule: config.schedule,
    version: p.version,
    origin: p.origin,
    file: p.file,
    active_run_id: p.active?.runId ?? null,
    last_run: p.lastRun?.at ?? null,
    last_run_status: p.lastRun?.status ?? null,
    live: live ?? null,
    config,
    yaml: p.yaml,
    // Manager mode, pipelines with `kubernetes.enabled`: the Service made for it, or why not.
    ...(p.service ? { kubernetes_service: p.service } : {}),
  };
}

/** A dry-run problem with where it is, for editors (`?diagnostics=true`); `code` is null for instantiation failures. */
export type DryRunDiagnostic = Omit<Diagnostic, 'code'> & { code: Diagnostic['code'] | null };

/**
 * Dry-run: validation plus instantiating transforms, serializers and connectors (no I/O). `issues`
 * is the spec's list of messages; `diagnostics` holds the same problems with path, line and column.
 */
export function dryRun(
  yaml: string,
  statefulTransforms: boolean,
  envAllow?: readonly string[],
): { valid: boolean; issues: string[]; diagnostics: DryRunDiagnostic[] } {
  const r = loadPipelineText(yaml, { statefulTransforms, envAllow });
  const issues = r.diagnostics.map((d) => formatDiagnostic(d));
  const diagnostics: DryRunDiagnostic[] = [...r.diagnostics];
  if (!r.config) return { valid: false, issues, diagnostics };
  const config = r.config;
  const ctx = { pipeline: config.name, log: silentLogger, signal: new AbortController().signal, processed: new MemoryProcessedFiles(), skipProcessed: false };
  const attempt = (what: string, path: (string | number)[], f: () => unknown) => {
    try {
      f();
    } catch (e) {
      const message = (e as Error).message;
      issues.push(`${what}: ${message}`);
      diagnostics.push({ code: null, path: formatPath(['pipeline', ...path]), message, severity: 'error', ...positionOf(yaml, ['pipeline', ...path]) });
    }
  };
  const schemaDir = readSetting('SCHEMA_DIR');
  attempt('transforms and serializers', [], () => buildPlan(config, { registry, schemaDir }));
  attempt(`source (${config.source.type})`, ['source'], () => (registry.source.get(config.source.type) as SourcePlugin).create(config.source as never, ctx));
  for (const [i, s] of [...config.sinks.entries(), ...(config.dlq ? [['dlq', config.dlq] as const] : [])]) {
    attempt(typeof i === 'number' ? `sinks[${i}] (${s.type})` : `dlq (${s.type})`, typeof i === 'number' ? ['sinks', i] : ['dlq'], () =>
      (registry.sink.get(s.type) as SinkPlugin).create(s as never, {
        ...ctx,
        encoder: encoderFor(registry, s.serializer_out ?? (i === 'dlq' ? { type: 'ndjson' } : config.serializer_out), { schemaDir }),
      }),
    );
  }
  return { valid: !r.diagnostics.some((d) => d.severity === 'error') && issues.length === r.diagnostics.length, issues, diagnostics: inLineOrder(diagnostics) };
}

export default async function pipelineRoutes(app: FastifyInstance, deps: ApiDeps) {
  const { manager, store } = deps;
  const tags = ['pipelines'];

  app.get('/api/pipelines', { schema: { tags, summary: 'Pipeline summaries' } }, async () =>
    manager.list().map((p) => ({
      name: p.name,
      enabled: p.config.enabled,
      status: p.status,
      desired: p.desired,
      schedule_type: p.config.schedule.type,
      last_run: p.lastRun?.at ?? null,
      last_run_status: p.lastRun?.status ?? null,
      // The active run's counters and rates, at most a few seconds old (issue 29); null when none runs here.
      live: pipelineLive(manager.liveOf(p)),
    })),
  );

  app.post(
    '/api/pipelines',
    { schema: { tags, summary: 'Register a pipeline (YAML as text/plain, application/yaml, or JSON {yaml_text})' } },
    async (req, reply) => {
      const p = await manager.register(yamlOf(req), { origin: 'api' });
      return reply.code(201).send(pipelineState(p));
    },
  );

  app.post(
    '/api/pipelines/dry-run',
    {
      schema: {
        tags,
        summary:
          'Validate without registering; always 200 {valid, issues}; diagnostics=true adds {diagnostics: [{severity, code, path, message, line, column}]} for editors',
        querystring: Type.Object({ diagnostics: Type.Optional(Type.Boolean()) }),
      },
    },
    async (req: FastifyRequest<{ Querystring: { diagnostics?: boolean } }>) => {
      let r: ReturnType<typeof dryRun>;
      try {
        r = dryRun(yamlOf(req), deps.settings.STATEFUL_TRANSFORMS, deps.settings.CONFIG_ENV_ALLOW);
      } catch (e) {
        const message = (e as Error).message;
        r = { valid: false, issues: [message], diagnostics: [{ code: null, path: '', message, severity: 'error' }] };
      }
      return req.query.diagnostics === true ? r : { valid: r.valid, issues: r.issues };
    },
  );

  app.post('/api/pipelines/reload', { schema: { tags, summary: 'Rescan SVC_PIPELINE_DIR' } }, async () => {
    const r = await manager.loadDirectory(deps.settings.PIPELINE_DIR);
    return { reloaded: r.reloaded, total: r.total, errors: r.errors };
  });

  app.get('/api/pipelines/:name', { schema: { tags, params: NameParams } }, async (req: NameReq) => {
    const p = manager.get(req.params.name);
    return pipelineState(p, pipelineLive(manager.liveOf(p)));
  });

  app.put(
    '/api/pipelines/:name',
    {
      schema: {
        tags,
        params: NameParams,
        summary: 'Replace the config (stopped, re-registered, restarted unless it was stopped: the YAML `enabled` applies to new pipelines only)',
      },
    },
    async (req: NameReq) => pipelineState(await manager.update(req.params.name, yamlOf(req))),
  );

  app.delete('/api/pipelines/:name', { schema: { tags, params: NameParams } }, async (req: NameReq, reply) => {
    await manager.remove(req.params.name);
    return reply.code(204).send();
  });

  app.post(
    '/api/pipelines/:name/start',
    { schema: { tags, params: NameParams, summary: 'Start scheduling or the stream; remembered across restarts (desired: running)' } },
    async (req: NameReq) => {
      const p = await manager.start(req.params.name);
      return { name: p.name, status: p.status };
    },
  );

  app.post(
    '/api/pipelines/:name/stop',
    {
      schema: { tags, params: NameParams, summary: 'Graceful stop: in-flight work drains first; remembered across restarts until started (desired: stopped)' },
    },
    async (req: NameReq) => {
      const p = await manager.stop(req.params.name);
      return { name: p.name, status: p.status };
    },
  );

  app.post(
    '/api/pipelines/:name/run',
    {
      schema: {
        tags,
        params: NameParams,
        querystring: Type.Object({ flush: Type.Optional(Type.Boolean()) }),
        summary: 'One immediate batch run (202); flush=true makes stateful transforms emit their open windows as partials',
      },
    },
    async (req: FastifyRequest<{ Params: { name: string }; Querystring: { flush?: boolean } }>, reply) =>
      reply.code(202).send(await manager.runNow(req.params.name, { flush: req.query.flush === true })),
  );

  app.get('/api/pipelines/:name/versions', { schema: { tags, params: NameParams } }, async (req: NameReq) => {
    manager.get(req.params.name);
    return store.pipelines.versions(req.params.name);
  });

  app.get(
    '/api/pipelines/:name/versions/:version',
    {
      schema: {
        tags,
        summary: 'One stored version with its YAML (the UI diffs two of them); 404 when the version does not exist',
        params: Type.Object({ name: Type.String({ minLength: 1 }), version: Type.Integer({ minimum: 1 }) }),
      },
    },
    async (req: FastifyRequest<{ Params: { name: string; version: number } }>) => {
      const { name, version } = req.params;
      manager.get(name);
      const row = (await store.pipelines.versions(name)).find((v) => v.version === version);
      const yaml = row && (await store.pipelines.versionYaml(name, version));
      if (!row || yaml === undefined) throw httpError('HTTP_PIPELINE_VERSION_NOT_FOUND', `pipeline '${name}' has no version ${version}`);
      return { ...row, yaml };
    },
  );

  app.post(
    '/api/pipelines/:name/rollback',
    { schema: { tags, params: NameParams, querystring: Type.Object({ version: Type.Integer({ minimum: 1 }) }) } },
    async (req: FastifyRequest<{ Params: { name: string }; Querystring: { version: number } }>) => {
      await manager.rollback(req.params.name, req.query.version);
      // Spec doc 2: the response reports `stopped`; the pipeline is restarted when enabled.
      return { name: req.params.name, status: 'stopped', rolled_back_to_version: req.query.version };
    },
  );

  app.get(
    '/api/pipelines/:name/placement',
    { schema: { tags, params: NameParams, summary: "A running stream's placement: its slots on workers (manager mode), or a single-slot view (standalone)" } },
    async (req: NameReq) => {
      const p = manager.get(req.params.name);
      if (p.config.schedule.type !== 'stream')
        throw httpError('HTTP_PLACEMENT_NOT_FOUND', `pipeline '${p.name}' is not a stream; placements exist for streams only`);
      const view = deps.cluster ? deps.cluster.placement(p.name) : manager.placement(p.name);
      if (!view)
        throw httpError(
          'HTTP_PLACEMENT_NOT_FOUND',
          deps.cluster ? `stream '${p.name}' has no active placement (stopped, or not placed on a worker yet)` : `stream '${p.name}' is not running`,
        );
      return view;
    },
  );

  // Where each target of a sharded batch pipeline is polled (issue 33); `q` finds a device.
  app.get(
    '/api/pipelines/:name/shards',
    {
      schema: {
        tags,
        params: NameParams,
        querystring: Type.Object(
          {
            q: Type.Optional(Type.String({ maxLength: 200, description: 'Only targets whose identity contains this text (case-insensitive).' })),
            limit: Type.Integer({ minimum: 1, maximum: 100000, default: 1000, description: 'Targets listed at most (`total` counts all).' }),
          },
          { additionalProperties: false },
        ),
        summary: "A sharded batch pipeline's targets and the worker polling each (manager mode; standalone: one shard on this node)",
      },
    },
    async (req: FastifyRequest<{ Params: { name: string }; Querystring: { q?: string; limit: number } }>) => {
      const p = manager.get(req.params.name);
      if (!p.config.workers || p.config.schedule.type === 'stream')
        throw httpError(
          'HTTP_SHARDS_NOT_FOUND',
          `pipeline '${p.name}' is not a sharded batch pipeline (set workers: {count: all} on a snmp_poll or prometheus_scrape batch pipeline)`,
        );
      if (deps.cluster) return deps.cluster.shards(p.config, req.query.q, req.query.limit);
      // Standalone: one shard, here.
      const plugin = registry.source.get(p.config.source.type) as SourcePlugin | undefined;
      const all = plugin?.shard ? await plugin.shard.targets(p.config.source as never) : [];
      const q = req.query.q?.toLowerCase();
      const hit = q ? all.filter((t) => t.toLowerCase().includes(q)) : all;
      const node = deps.settings.NODE_ID;
      return {
        pipeline: p.name,
        running: !!p.active,
        workers: [{ worker_id: node, shards: 1, targets: all.length }],
        total: all.length,
        targets: hit.slice(0, req.query.limit).map((target) => ({ target, worker_id: node, shard: 0, status: 'planned' })),
      };
    },
  );
}
