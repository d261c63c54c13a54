// OpenAI-style chat completions (POST {base}/chat/completions, `Authorization: Bearer`), the
// default provider. The same request reaches servers that speak it with SVC_AI_BASE_URL: Ollama
// (http://localhost:11434/v1), vLLM (http://host:8000/v1), LiteLLM, Azure-style gateways.
import { httpError } from '../core/http-errors.js';
import { joinUrl, postJson, vendorMessage, type ChatRequest, type Provider, type ProviderOptions } from './provider.js';

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';
export const OPENAI_DEFAULT_MODEL = 'gpt-4.1-mini';

/** `{error: {message, type, code}}` (OpenAI, vLLM) or `{error: "text"}` (older Ollama). */
const errorMessage = (b: unknown): string | undefined => {
  const body = b as { error?: string | { message?: unknown; type?: unknown; code?: unknown }; message?: unknown } | null | undefined;
  const e = body?.error;
  if (typeof e === 'string') return e;
  return vendorMessage(e?.code ?? e?.type, e?.message) ?? (typeof body?.message === 'string' ? body.message : undefined);
};

/** What is read of an answer: `{choices: [{message: {content, refusal}, finish_reason}]}`. */
interface Answer {
  choices?: { message?: { content?: unknown; refusal?: string | null }; finish_reason?: unknown }[];
}

export function openaiProvider(o: ProviderOptions): Provider {
  const url = joinUrl(o.baseUrl || OPENAI_BASE_URL, '/chat/completions');
  const model = o.model || OPENAI_DEFAULT_MODEL;
  return {
    name: 'openai',
    model,
    async complete(req: ChatRequest) {
      const body = { model, messages: [{ role: 'system', content: req.system }, ...req.messages] };
      const res = await postJson<Answer>(url, body, {
        vendor: 'openai',
        headers: { authorization: `Bearer ${o.apiKey}` },
        timeoutMs: o.timeoutMs,
        errorMessage,
      });
      const choice = res.choices?.[0];
      const content = choice?.message?.content;
      // Some servers answer content as a list of parts.
      const text =
        typeof content === 'string'
          ? content
          : Array.isArray(content)
            ? content
                .map((p: unknown) => {
                  const t = (p as { text?: unknown } | null)?.text;
                  return typeof t === 'string' ? t : '';
                })
                .join('')
            : '';
      if (!text.trim()) {
        const why = choice?.message?.refusal ?? (choice?.finish_reason ? `finish_reason ${choice.finish_reason}` : 'no choices');
        throw httpError('HTTP_AI_PROVIDER_FAILED', `openai answered without text (${why})`);
      }
      return text;
    },
  };
}
