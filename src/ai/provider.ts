// What every AI provider module implements (one chat turn: a system prompt and the messages so far,
// answered with text), and the one HTTP call they share: JSON over fetch with a bounded wait, a
// bounded answer, and the vendor's error message turned into an HTTP error of the catalog (HTTP_AI_*).
import { HttpError, httpError } from '../core/http-errors.js';

export type ProviderName = 'openai' | 'anthropic' | 'gemini';

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  system: string;
  messages: ChatMessage[];
}

export interface Provider {
  readonly name: ProviderName;
  readonly model: string;
  /** The model's text answer; throws HTTP_AI_PROVIDER_FAILED (502) when the provider fails or does not answer in time. */
  complete(req: ChatRequest): Promise<string>;
}

export interface ProviderOptions {
  apiKey: string;
  /** SVC_AI_MODEL, or the provider's default. */
  model: string;
  /** SVC_AI_BASE_URL without a trailing slash, or the vendor's endpoint. */
  baseUrl: string;
  timeoutMs: number;
}

/** Largest answer read from a provider: a pipeline or an explanation is a few kB; a runaway server is cut off. */
export const MAX_ANSWER_BYTES = 4 << 20;

export interface PostOptions {
  /** Vendor name in messages: `openai answered 401: ...`. */
  vendor: ProviderName;
  headers: Record<string, string>;
  timeoutMs: number;
  /** The vendor's error message from its error body, when it has the vendor's shape. */
  errorMessage(body: unknown): string | undefined;
}

/**
 * POSTs `body` as JSON and returns the parsed JSON answer; every failure is an HTTP_AI_PROVIDER_FAILED
 * (502). `T` is what the caller reads of the vendor's answer (a JSON object, not checked further:
 * give its fields `unknown` or optional types, and check them).
 */
export async function postJson<T extends object>(url: string, body: unknown, o: PostOptions): Promise<T> {
  const seconds = o.timeoutMs / 1000;
  const signal = AbortSignal.timeout(o.timeoutMs);
  let text: string;
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...o.headers }, body: JSON.stringify(body), signal });
    text = await readCapped(res);
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    if (err.name === 'TimeoutError' || signal.aborted)
      throw httpError('HTTP_AI_PROVIDER_FAILED', `${o.vendor} did not answer within ${seconds} s (SVC_AI_TIMEOUT_SECONDS)`);
    if (err instanceof HttpError) throw err;
    const why = err.cause?.code ?? err.cause?.message ?? err.message;
    throw httpError('HTTP_AI_PROVIDER_FAILED', `${o.vendor} is unreachable at ${new URL(url).origin}: ${why}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const message = (json !== undefined ? o.errorMessage(json) : undefined) ?? (text.trim().slice(0, 300) || res.statusText);
    throw httpError('HTTP_AI_PROVIDER_FAILED', `${o.vendor} answered ${res.status}: ${message}`);
  }
  if (json === undefined || json === null || typeof json !== 'object')
    throw httpError('HTTP_AI_PROVIDER_FAILED', `${o.vendor} answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
  return json as T;
}

async function readCapped(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_ANSWER_BYTES) throw httpError('HTTP_AI_PROVIDER_FAILED', `the provider's answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** `kind: message` from a vendor's error body (`invalid_api_key: Incorrect API key ...`); undefined without a message. */
export const vendorMessage = (kind: unknown, message: unknown): string | undefined =>
  typeof message === 'string' ? [kind, message].filter((x) => typeof x === 'string' && x).join(': ') : undefined;

/** Joins a base URL (trailing slashes dropped) and a path. */
export const joinUrl = (base: string, path: string) => base.replace(/\/+$/, '') + path;
