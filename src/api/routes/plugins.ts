// Each plugin's own JSON Schema (its TypeBox config), for the UI's YAML editor (completion, hover)
// and plugin reference: GET /api/plugins/schemas (everything, with the pipeline document's schema)
// and GET /api/plugins/{kind}/{key} (one plugin). /api/plugins itself keeps the spec's key lists.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { Pipeline, SinkCommon } from '../../config/pipeline-schema.js';
import { registry } from '../../plugins/registry.js';
import type { AnyPlugin, PluginKind } from '../../plugins/types.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

/** The category names of GET /api/plugins, in its order. */
const CATEGORIES = { sources: 'source', sinks: 'sink', serializers: 'serializer', transforms: 'transform' } as const satisfies Record<string, PluginKind>;
type Category = keyof typeof CATEGORIES;

/** TypeBox schemas are JSON Schema plus symbol keys; a JSON round trip leaves the JSON Schema. */
const jsonSchema = (s: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(s)) as Record<string, unknown>;

/** What the UI needs to know about one plugin, all of it from the plugin module itself. */
export function pluginDoc(p: AnyPlugin) {
  return {
    key: p.key,
    kind: p.kind,
    summary: p.summary,
    status: p.status ?? 'stable',
    schema: jsonSchema(p.config),
    examples: p.examples.map((e) => ({ title: e.title, yaml: e.yaml })),
    ...(p.kind === 'source' ? { mode: p.mode, delivery: p.delivery } : {}),
    ...(p.kind === 'sink' ? { accepts: p.accepts, delivery: p.delivery } : {}),
    ...(p.kind === 'serializer' ? { direction: p.direction } : {}),
    ...(p.kind === 'transform' ? { stateful: p.stateful === true } : {}),
  };
}

export function pluginSchemas() {
  const byCategory = Object.fromEntries(
    (Object.entries(CATEGORIES) as [Category, PluginKind][]).map(([cat, kind]) => [
      cat,
      Object.fromEntries([...registry[kind].values()].map((p) => [p.key, pluginDoc(p)])),
    ]),
  ) as Record<Category, Record<string, ReturnType<typeof pluginDoc>>>;
  return { pipeline: jsonSchema(Pipeline), sink_common: jsonSchema(SinkCommon), ...byCategory };
}

const PluginParams = Type.Object({
  kind: Type.Union(
    Object.keys(CATEGORIES).map((c) => Type.Literal(c)),
    { description: 'sources, sinks, serializers or transforms' },
  ),
  key: Type.String({ minLength: 1, description: 'The plugin key, as listed by GET /api/plugins' }),
});

const PluginDocSchema = Type.Object(
  {
    key: Type.String(),
    kind: Type.String(),
    summary: Type.String(),
    status: Type.String(),
    schema: Type.Object({}, { additionalProperties: true, description: 'JSON Schema of the plugin parameters (type and the sink common fields excluded)' }),
    examples: Type.Array(Type.Object({ title: Type.String(), yaml: Type.String() })),
  },
  { additionalProperties: true },
);

export default async function pluginRoutes(app: FastifyInstance, _deps: ApiDeps) {
  const tags = ['daemon'];
  // Built on first use: the registry does not change while the daemon runs.
  let cached: ReturnType<typeof pluginSchemas> | undefined;
  const all = () => (cached ??= pluginSchemas());

  app.get(
    '/api/plugins/schemas',
    {
      schema: {
        tags,
        summary: "Every plugin's JSON Schema, with the pipeline document's (pipeline, sink_common, sources, sinks, serializers, transforms)",
        response: {
          200: Type.Object(
            {
              pipeline: Type.Object({}, { additionalProperties: true }),
              sink_common: Type.Object({}, { additionalProperties: true }),
              sources: Type.Record(Type.String(), PluginDocSchema),
              sinks: Type.Record(Type.String(), PluginDocSchema),
              serializers: Type.Record(Type.String(), PluginDocSchema),
              transforms: Type.Record(Type.String(), PluginDocSchema),
            },
            { additionalProperties: false },
          ),
        },
      },
    },
    // Sent as a string: the response schema documents the shape; serializing through it would
    // drop the open-ended JSON Schema objects.
    async (_req, reply) => reply.type('application/json; charset=utf-8').send(JSON.stringify(all())),
  );

  app.get(
    '/api/plugins/:kind/:key',
    {
      schema: {
        tags,
        summary: "One plugin's JSON Schema, summary and examples; 404 when no such plugin",
        params: PluginParams,
        response: { 200: PluginDocSchema },
      },
    },
    async (req: FastifyRequest<{ Params: { kind: Category; key: string } }>, reply) => {
      const { kind, key } = req.params;
      const doc = all()[kind][key];
      if (!doc) throw httpError('HTTP_PLUGIN_NOT_FOUND', `no ${CATEGORIES[kind]} plugin '${key}'; registered: ${Object.keys(all()[kind]).join(', ')}`);
      return reply.type('application/json; charset=utf-8').send(JSON.stringify(doc));
    },
  );
}
