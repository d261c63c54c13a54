// Anthropic messages (POST {base}/v1/messages with `x-api-key` and `anthropic-version`). The
// system prompt is the top-level `system` field; `max_tokens` is required by the API.
import { httpError } from '../core/http-errors.js';
import { joinUrl, postJson, vendorMessage, type ChatRequest, type Provider, type ProviderOptions } from './provider.js';

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_DEFAULT_MODEL = 'claude-sonnet-4-5';
/** The API version every request names (the current one of the messages API). */
export const ANTHROPIC_VERSION = '2023-06-01';
/** Room for a long pipeline or explanation. */
const MAX_TOKENS = 8192;

/** `{type: "error", error: {type, message}}`. */
const errorMessage = (b: unknown): string | undefined => {
  const e = (b as { error?: { type?: unknown; message?: unknown } } | null | undefined)?.error;
  return vendorMessage(e?.type, e?.message);
};

/** What is read of an answer: `{content: [{type: "text", text}, ...], stop_reason}`. */
interface Answer {
  content?: unknown;
  stop_reason?: unknown;
}

export function anthropicProvider(o: ProviderOptions): Provider {
  const url = joinUrl(o.baseUrl || ANTHROPIC_BASE_URL, '/v1/messages');
  const model = o.model || ANTHROPIC_DEFAULT_MODEL;
  return {
    name: 'anthropic',
    model,
    async complete(req: ChatRequest) {
      const body = { model, max_tokens: MAX_TOKENS, system: req.system, messages: req.messages };
      const headers = { 'x-api-key': o.apiKey, 'anthropic-version': ANTHROPIC_VERSION };
      const res = await postJson<Answer>(url, body, { vendor: 'anthropic', headers, timeoutMs: o.timeoutMs, errorMessage });
      const blocks: unknown[] = Array.isArray(res.content) ? res.content : [];
      const text = blocks
        .filter((b): b is { text: string } => (b as { type?: unknown } | null)?.type === 'text' && typeof (b as { text?: unknown }).text === 'string')
        .map((b) => b.text)
        .join('');
      if (!text.trim()) throw httpError('HTTP_AI_PROVIDER_FAILED', `anthropic answered without text (stop_reason ${res.stop_reason ?? 'none'})`);
      return text;
    },
  };
}
