// AI assist (spec doc 2: GET /api/ai/status, POST /api/ai/suggest): the provider chosen by
// SVC_AI_PROVIDER, off while SVC_AI_API_KEY is empty. Every error message and log line passes
// through one redactor of the key, whatever the provider or a proxy echoed back.
import type { Logger } from '../observability/log.js';
import { redactor } from '../core/secrets.js';
import type { Settings } from '../settings.js';
import { anthropicProvider } from './anthropic.js';
import { geminiProvider } from './gemini.js';
import { openaiProvider } from './openai.js';
import { HttpError, httpError } from '../core/http-errors.js';
import type { Provider, ProviderName, ProviderOptions } from './provider.js';
import { explain, generate, type Suggestion } from './suggest.js';

const PROVIDERS: Record<ProviderName, (o: ProviderOptions) => Provider> = { openai: openaiProvider, anthropic: anthropicProvider, gemini: geminiProvider };

export type AiStatus = { available: false } | { available: true; provider: ProviderName; model: string };

export interface SuggestRequest {
  mode: 'generate' | 'explain';
  prompt: string;
  yaml?: string;
}

export interface AiAssist {
  status(): AiStatus;
  /** The suggestion's text; throws the catalog's HTTP_AI_OFF (503), HTTP_AI_PROVIDER_FAILED (502) or HTTP_AI_NO_PIPELINE (422). */
  suggest(req: SuggestRequest): Promise<string>;
}

type AiSettings = Pick<Settings, 'AI_PROVIDER' | 'AI_API_KEY' | 'AI_MODEL' | 'AI_BASE_URL' | 'AI_TIMEOUT_SECONDS' | 'STATEFUL_TRANSFORMS' | 'CONFIG_ENV_ALLOW'>;

export function aiAssist(settings: AiSettings, log: Logger): AiAssist {
  const apiKey = settings.AI_API_KEY.trim();
  const provider = apiKey
    ? PROVIDERS[settings.AI_PROVIDER]({
        apiKey,
        model: settings.AI_MODEL.trim(),
        baseUrl: settings.AI_BASE_URL.trim(),
        timeoutMs: settings.AI_TIMEOUT_SECONDS * 1000,
      })
    : undefined;
  const redact = redactor(apiKey ? [apiKey] : []);
  const opts = { statefulTransforms: settings.STATEFUL_TRANSFORMS, envAllow: settings.CONFIG_ENV_ALLOW };

  return {
    status: () => (provider ? { available: true, provider: provider.name, model: provider.model } : { available: false }),

    async suggest(req) {
      if (!provider)
        throw httpError('HTTP_AI_OFF', 'AI assist is off: set SVC_AI_API_KEY (and SVC_AI_PROVIDER, SVC_AI_MODEL, SVC_AI_BASE_URL as needed) and restart');
      const started = Date.now();
      const what = { mode: req.mode, provider: provider.name, model: provider.model, prompt_chars: req.prompt.length, yaml_chars: req.yaml?.length ?? 0 };
      let s: Suggestion;
      try {
        s = req.mode === 'generate' ? await generate(provider, req.prompt, req.yaml, opts) : await explain(provider, req.prompt, req.yaml ?? '', opts);
      } catch (e) {
        const err = e instanceof HttpError ? e : httpError('HTTP_AI_PROVIDER_FAILED', `${provider.name}: ${(e as Error).message}`);
        const detail = redact(err.message);
        log.warn({ ...what, status: err.statusCode, ms: Date.now() - started, err: detail.split('\n')[0] }, 'AI suggestion failed');
        throw new HttpError(err.code, detail);
      }
      log.info({ ...what, calls: s.calls, ms: Date.now() - started }, 'AI suggestion');
      return redact(s.result);
    },
  };
}
