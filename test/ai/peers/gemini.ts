// Google's Gemini API as a test server: POST /v1beta/models/{model}:generateContent with the key in
// `x-goog-api-key` or `?key=`; `contents` (a non-empty list of {role: user|model, parts: [{text}]})
// required, unknown fields refused as Google's JSON parser does; errors as `{error: {code, message,
// status, details}}` (a wrong key is a 400 INVALID_ARGUMENT, a missing one 403 PERMISSION_DENIED).
import { randomBytes } from 'node:crypto';
import { startVendorPeer, type AiPeer, type Vendor } from './vendor.js';

const STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 500: 'INTERNAL' };
const err = (code: number, message: string, details?: unknown[]) => ({
  error: { code, message, status: STATUS[code] ?? 'UNKNOWN', ...(details ? { details } : {}) },
});
const invalid = (message: string) => ({ status: 400, body: err(400, message) });
const FIELDS = new Set([
  'contents',
  'systemInstruction',
  'system_instruction',
  'generationConfig',
  'generation_config',
  'safetySettings',
  'safety_settings',
  'tools',
  'toolConfig',
  'cachedContent',
]);
const PATH = /^\/v1beta\/models\/([^/:]+):generateContent$/;

const checkContent = (c: any, where: string): string | undefined => {
  if (!Array.isArray(c?.parts) || !c.parts.length) return `* GenerateContentRequest.${where}.parts: contents.parts must not be empty.`;
  for (const p of c.parts) if (typeof p?.text !== 'string') return `* GenerateContentRequest.${where}.parts: only text parts are served by this test server`;
  return undefined;
};

export function geminiVendor(opts: { models?: string[] } = {}): Vendor {
  return {
    name: 'gemini',
    basePath: '',
    check({ method, path, query, headers, body }, key) {
      const model = PATH.exec(path)?.[1];
      if (method !== 'POST' || !model) return { status: 404, body: err(404, `Method not found: ${method} ${path}`) };
      const given = (headers['x-goog-api-key'] as string | undefined) ?? query.get('key') ?? undefined;
      if (!given) {
        return {
          status: 403,
          body: err(
            403,
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
          ),
        };
      }
      if (given !== key) {
        const info = {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
          metadata: { service: 'generativelanguage.googleapis.com' },
        };
        return { status: 400, body: err(400, 'API key not valid. Please pass a valid API key.', [info]) };
      }
      if (opts.models && !opts.models.includes(decodeURIComponent(model))) {
        return {
          status: 404,
          body: err(404, `models/${decodeURIComponent(model)} is not found for API version v1beta, or is not supported for generateContent.`),
        };
      }
      for (const k of Object.keys(body ?? {})) if (!FIELDS.has(k)) return invalid(`Invalid JSON payload received. Unknown name "${k}": Cannot find field.`);
      if (!Array.isArray(body.contents) || !body.contents.length) return invalid('* GenerateContentRequest.contents: contents is not specified');
      for (const [i, c] of (body.contents as any[]).entries()) {
        if (c.role !== undefined && c.role !== 'user' && c.role !== 'model') return invalid(`Please use a valid role: user, model.`);
        const bad = checkContent(c, `contents[${i}]`);
        if (bad) return invalid(bad);
      }
      const sys = body.systemInstruction ?? body.system_instruction;
      if (sys !== undefined) {
        const bad = checkContent(sys, 'system_instruction');
        if (bad) return invalid(bad);
      }
      return undefined;
    },
    success: (text, { path }) => ({
      candidates: [{ content: { parts: [{ text }], role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 50, totalTokenCount: 150 },
      modelVersion: decodeURIComponent(PATH.exec(path)![1]!),
      responseId: randomBytes(8).toString('hex'),
    }),
    serverError: (message) => err(500, message),
  };
}

export const startGeminiPeer = (key: string, opts: Parameters<typeof geminiVendor>[0] = {}): Promise<AiPeer> => startVendorPeer(geminiVendor(opts), key);
