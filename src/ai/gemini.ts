// Google Gemini generateContent (POST {base}/v1beta/models/{model}:generateContent with
// `x-goog-api-key`). The system prompt is `systemInstruction`; the model's turns have role `model`.
import { httpError } from '../core/http-errors.js';
import { joinUrl, postJson, vendorMessage, type ChatRequest, type Provider, type ProviderOptions } from './provider.js';

export const GEMINI_BASE_URL = 'https://generativelanguage.googleapis.com';
export const GEMINI_DEFAULT_MODEL = 'gemini-2.5-flash';

/** Google's `{error: {code, message, status}}`. */
const errorMessage = (b: unknown): string | undefined => {
  const e = (b as { error?: { status?: unknown; message?: unknown } } | null | undefined)?.error;
  return vendorMessage(e?.status, e?.message);
};

/** What is read of an answer: `{candidates: [{content: {parts: [{text, thought?}]}, finishReason}], promptFeedback}`. */
interface Answer {
  candidates?: { content?: { parts?: unknown }; finishReason?: unknown }[];
  promptFeedback?: { blockReason?: unknown };
}

export function geminiProvider(o: ProviderOptions): Provider {
  // `models/gemini-x` (the API's resource name) and `gemini-x` both work as SVC_AI_MODEL.
  const model = (o.model || GEMINI_DEFAULT_MODEL).replace(/^models\//, '');
  const url = joinUrl(o.baseUrl || GEMINI_BASE_URL, `/v1beta/models/${encodeURIComponent(model)}:generateContent`);
  return {
    name: 'gemini',
    model,
    async complete(req: ChatRequest) {
      const body = {
        systemInstruction: { parts: [{ text: req.system }] },
        contents: req.messages.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] })),
      };
      const res = await postJson<Answer>(url, body, { vendor: 'gemini', headers: { 'x-goog-api-key': o.apiKey }, timeoutMs: o.timeoutMs, errorMessage });
      const cand = res.candidates?.[0];
      const parts: unknown[] = Array.isArray(cand?.content?.parts) ? cand.content.parts : [];
      // Thinking models add parts marked `thought: true`: not part of the answer.
      const text = parts
        .filter((p): p is { text: string } => typeof (p as { text?: unknown } | null)?.text === 'string' && !(p as { thought?: unknown }).thought)
        .map((p) => p.text)
        .join('');
      if (!text.trim()) {
        const why = res.promptFeedback?.blockReason ? `blocked: ${res.promptFeedback.blockReason}` : `finishReason ${cand?.finishReason ?? 'none'}`;
        throw httpError('HTTP_AI_PROVIDER_FAILED', `gemini answered without text (${why})`);
      }
      return text;
    },
  };
}
