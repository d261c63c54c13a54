// AI assist (spec doc 2): whether it is on and with which provider and model, and suggestions:
// pipeline YAML generated from a request (validated, one repair round) or a pipeline explained.
// The provider's key never leaves in an answer or a log line (src/ai/index.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { aiAssist } from '../../ai/index.js';
import type { ApiDeps } from '../deps.js';
import { httpError } from '../../core/http-errors.js';

/** Longest request text and pipeline sent on to a provider (the request body limit is 1 MiB). */
const MAX_PROMPT = 20_000;
const MAX_YAML = 256 * 1024;

const SuggestBody = Type.Object(
  {
    mode: Type.Union([Type.Literal('generate'), Type.Literal('explain')], {
      description: '`generate`: pipeline YAML for `prompt`; `explain`: prose about `yaml`',
    }),
    prompt: Type.Optional(
      Type.String({ maxLength: MAX_PROMPT, description: 'generate: what the pipeline should do (required); explain: an optional question about the pipeline' }),
    ),
    yaml: Type.Optional(
      Type.String({ maxLength: MAX_YAML, description: 'explain: the pipeline to explain (required); generate: an optional pipeline to change' }),
    ),
  },
  { additionalProperties: false },
);

const Status = Type.Object({
  available: Type.Boolean({ description: 'false while SVC_AI_API_KEY is empty' }),
  provider: Type.Optional(Type.String({ description: 'openai, anthropic or gemini (when available)' })),
  model: Type.Optional(Type.String({ description: 'the model asked (when available)' })),
});

const Detail = Type.Object({ detail: Type.String() });

export default async function aiRoutes(app: FastifyInstance, deps: ApiDeps) {
  const tags = ['ai'];
  const ai = aiAssist(deps.settings, deps.log.child({ component: 'ai' }));

  app.get('/api/ai/status', { schema: { tags, summary: 'Whether AI assist is on, with its provider and model', response: { 200: Status } } }, async () =>
    ai.status(),
  );

  app.post(
    '/api/ai/suggest',
    {
      schema: {
        tags,
        summary: 'Pipeline YAML generated from a request (validated before it is returned), or a pipeline explained: {result}',
        body: SuggestBody,
        response: { 200: Type.Object({ result: Type.String() }), 422: Detail, 502: Detail, 503: Detail },
      },
    },
    async (req: FastifyRequest<{ Body: Static<typeof SuggestBody> }>) => {
      const { mode, prompt = '', yaml } = req.body;
      if (mode === 'explain' && !yaml?.trim()) throw httpError('HTTP_INVALID', 'body.yaml is required for mode explain: the pipeline YAML to explain');
      if (mode === 'generate' && !prompt.trim()) throw httpError('HTTP_INVALID', 'body.prompt is required for mode generate: what the pipeline should do');
      return { result: await ai.suggest({ mode, prompt, ...(yaml !== undefined ? { yaml } : {}) }) };
    },
  );
}
