// OpenAI's chat completions API as a test server: POST /v1/chat/completions with
// `Authorization: Bearer <key>`; `model` and a non-empty `messages` list of {role, content};
// errors as `{error: {message, type, param, code}}` with OpenAI's statuses and messages. A server
// that echoes a wrong key in full (some gateways do; OpenAI masks most of it) checks our redaction.
import { randomBytes } from 'node:crypto';
import { startVendorPeer, type AiPeer, type Vendor } from './vendor.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);
const err = (message: string, code: string | null = null, type = 'invalid_request_error') => ({ error: { message, type, param: null, code } });

export function openaiVendor(opts: { echoKey?: boolean; models?: string[] } = {}): Vendor {
  return {
    name: 'openai',
    basePath: '/v1',
    check({ method, path, headers, body }, key) {
      if (method !== 'POST' || path !== '/v1/chat/completions') return { status: 404, body: err(`Invalid URL (${method} ${path})`) };
      const auth = headers.authorization;
      if (!auth) {
        return {
          status: 401,
          body: err(
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          ),
        };
      }
      const given = /^Bearer (.+)$/.exec(auth)?.[1];
      if (given !== key) {
        const shown = opts.echoKey ? given : `${given?.slice(0, 3)}*****${given?.slice(-4)}`;
        return {
          status: 401,
          body: err(`Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_api_key'),
        };
      }
      if (typeof body?.model !== 'string' || !body.model) return { status: 400, body: err('you must provide a model parameter') };
      if (opts.models && !opts.models.includes(body.model)) {
        return { status: 404, body: err(`The model \`${body.model}\` does not exist or you do not have access to it.`, 'model_not_found') };
      }
      if (!Array.isArray(body.messages) || !body.messages.length)
        return { status: 400, body: err("Missing required parameter: 'messages'.", 'missing_required_parameter') };
      for (const [i, m] of (body.messages as any[]).entries()) {
        if (!ROLES.has(m?.role))
          return {
            status: 400,
            body: err(`Invalid value: '${m?.role}'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'.`, 'invalid_value'),
          };
        if (typeof m.content !== 'string') return { status: 400, body: err(`Invalid type for 'messages[${i}].content': expected a string.`, 'invalid_type') };
      }
      return undefined;
    },
    success: (text, { body }) => ({
      id: `chatcmpl-${randomBytes(8).toString('hex')}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
    }),
    serverError: (message) => err(message, null, 'server_error'),
  };
}

export const startOpenAiPeer = (key: string, opts: Parameters<typeof openaiVendor>[0] = {}): Promise<AiPeer> => startVendorPeer(openaiVendor(opts), key);
