// Anthropic's messages API as a test server: POST /v1/messages with `x-api-key` and
// `anthropic-version`; `model`, `max_tokens` and `messages` (user first, then alternating) required,
// `system` a string; errors as `{type: "error", error: {type, message}}` with Anthropic's statuses.
import { randomBytes } from 'node:crypto';
import { startVendorPeer, type AiPeer, type Vendor } from './vendor.js';

const err = (type: string, message: string) => ({ type: 'error', error: { type, message }, request_id: `req_${randomBytes(8).toString('hex')}` });
const invalid = (message: string) => ({ status: 400, body: err('invalid_request_error', message) });

export function anthropicVendor(): Vendor {
  return {
    name: 'anthropic',
    basePath: '',
    check({ method, path, headers, body }, key) {
      if (method !== 'POST' || path !== '/v1/messages') return { status: 404, body: err('not_found_error', 'Not Found') };
      const given = headers['x-api-key'];
      if (!given) return { status: 401, body: err('authentication_error', 'x-api-key header is required') };
      if (given !== key) return { status: 401, body: err('authentication_error', 'invalid x-api-key') };
      if (!headers['anthropic-version']) return invalid('anthropic-version: header is required');
      if (headers['anthropic-version'] !== '2023-06-01') return invalid(`anthropic-version: unknown version ${headers['anthropic-version']}`);
      if (typeof body?.model !== 'string' || !body.model) return invalid('model: Field required');
      if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return invalid('max_tokens: Field required');
      if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system)) return invalid('system: Input should be a valid string');
      if (!Array.isArray(body.messages) || !body.messages.length) return invalid('messages: Field required');
      for (const [i, m] of (body.messages as any[]).entries()) {
        if (m?.role !== 'user' && m?.role !== 'assistant') return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
        if (typeof m.content !== 'string' && !Array.isArray(m.content)) return invalid(`messages.${i}.content: Input should be a valid list`);
        if (i === 0 && m.role !== 'user') return invalid('messages: first message must use the "user" role');
        if (i > 0 && m.role === body.messages[i - 1].role) return invalid('messages: roles must alternate between "user" and "assistant"');
      }
      return undefined;
    },
    success: (text, { body }) => ({
      id: `msg_${randomBytes(12).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 100, output_tokens: 50 },
    }),
    serverError: (message) => err('api_error', message),
  };
}

export const startAnthropicPeer = (key: string): Promise<AiPeer> => startVendorPeer(anthropicVendor(), key);
