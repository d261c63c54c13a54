// Connector reachability checks (spec doc 2): one source or sink config, or every connector of a
// pipeline's YAML. Each check is bounded in time; secrets never appear in an answer.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { formatDiagnostic } from '../../config/diagnostics.js';
import { loadComponent, loadPipelineText } from '../../config/load.js';
import { DEFAULT_TEST_TIMEOUT_MS, testConnector, testPipelineConnectors } from '../../engine/connector-test.js';
import { registry } from '../../plugins/registry.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';
import { yamlOf } from './pipelines.js';

const Query = Type.Object({
  timeout_seconds: Type.Optional(
    Type.Number({ exclusiveMinimum: 0, maximum: 120, description: `Bound of each check (default ${DEFAULT_TEST_TIMEOUT_MS / 1000} s).` }),
  ),
});
type Q = { timeout_seconds?: number };

/**
 * Which side a `/api/connectors/test` body is: `role` when given, else a source when the type is a
 * registered source and the body validates as one, else a sink (mqtt is both: its source needs
 * `topic` to subscribe, its sink a `topic` to publish, so the body decides).
 */
function checkBody(body: unknown, envAllow: readonly string[]) {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw httpError('HTTP_INVALID', 'body must be one connector config: {"type": "mqtt", "host": ..., ...} (optionally "role": "source" or "sink")');
  const { role, ...raw } = body as { role?: unknown; type?: unknown };
  if (role !== undefined && role !== 'source' && role !== 'sink')
    throw httpError('HTTP_INVALID', `role must be "source" or "sink", got ${JSON.stringify(role)}`);
  if (typeof raw.type !== 'string') throw httpError('HTTP_INVALID', "connector config needs 'type'");
  const roles: ('source' | 'sink')[] = role ? [role] : (['source', 'sink'] as const).filter((k) => registry[k].has(raw.type as string));
  if (roles.length === 0)
    throw httpError(
      'HTTP_CONNECTOR_INVALID',
      `unknown connector type '${raw.type}'; registered sources: ${[...registry.source.keys()].join(', ')}; sinks: ${[...registry.sink.keys()].join(', ')}`,
    );
  let first: string[] | undefined;
  for (const kind of roles) {
    const r = loadComponent(kind, raw, { envAllow });
    if (r.config) return { kind, config: r.config };
    first ??= r.diagnostics.map((d) => `${kind}.${formatDiagnostic(d)}`.replace(/^(source|sink)\.\[/, '$1['));
  }
  throw httpError('HTTP_CONNECTOR_INVALID', `invalid connector config: ${first!.join('; ')}`);
}

export default async function connectorRoutes(app: FastifyInstance, deps: ApiDeps) {
  const tags = ['connectors'];
  const opts = (q: Q) => ({ log: deps.log, timeoutMs: (q.timeout_seconds ?? DEFAULT_TEST_TIMEOUT_MS / 1000) * 1000 });

  app.post(
    '/api/connectors/test',
    { schema: { tags, querystring: Query, summary: 'Reachability check of one source or sink config: {ok, latency_ms, error}' } },
    async (req: FastifyRequest<{ Querystring: Q }>) => {
      const { kind, config } = checkBody(req.body, deps.settings.CONFIG_ENV_ALLOW);
      return testConnector(kind, config, opts(req.query));
    },
  );

  app.post(
    '/api/connectors/test-pipeline',
    { schema: { tags, querystring: Query, summary: "Reachability check of a pipeline's source and sinks (raw YAML)" } },
    async (req: FastifyRequest<{ Querystring: Q }>) => {
      const r = loadPipelineText(yamlOf(req), { statefulTransforms: deps.settings.STATEFUL_TRANSFORMS, envAllow: deps.settings.CONFIG_ENV_ALLOW });
      if (!r.config)
        throw httpError(
          'HTTP_CONNECTOR_INVALID',
          `invalid pipeline: ${r.diagnostics
            .filter((d) => d.severity === 'error')
            .map((d) => formatDiagnostic(d))
            .join('; ')}`,
        );
      return testPipelineConnectors(r.config, opts(req.query));
    },
  );
}
