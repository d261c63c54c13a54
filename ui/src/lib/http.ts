// Every call to the server: JSON in and out, the credential attached, and every failure turned
// into an ApiFailure carrying the server's `{detail}` (or what went wrong on the way).
import { authHeaders, loginRequired } from './session.js';

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface RequestOptions {
  method?: string;
  /** JSON body. */
  json?: unknown;
  /** Pipeline YAML, sent as application/yaml. */
  yaml?: string;
  /** A multipart form (MIB upload); the browser sets its content type. */
  form?: FormData;
  query?: Record<string, string | number | boolean | undefined>;
  /** Read the body as text (CSV) instead of JSON. */
  text?: boolean;
  /** Aborts the request (a walk the operator cancels). */
  signal?: AbortSignal;
  /** Receives the answer's headers (the X-Total-Count of a paged list). */
  onHeaders?: (headers: Headers) => void;
}

export function withQuery(path: string, query: RequestOptions['query'] = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export async function request<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: opts.text ? 'text/csv, application/json' : 'application/json', ...authHeaders() };
  let body: string | FormData | undefined;
  if (opts.form !== undefined) {
    body = opts.form;
  } else if (opts.yaml !== undefined) {
    headers['content-type'] = 'application/yaml';
    body = opts.yaml;
  } else if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  let res: Response;
  try {
    res = await fetch(withQuery(path, opts.query), { method: opts.method ?? 'GET', headers, body, credentials: 'omit', signal: opts.signal });
  } catch (e) {
    if (opts.signal?.aborted) throw new ApiFailure(0, 'cancelled');
    throw new ApiFailure(0, `the server did not answer: ${(e as Error).message}`);
  }
  if (res.status === 401) loginRequired.value = true;
  const text = await res.text();
  if (!res.ok) {
    let detail = `${res.status} ${res.statusText}`;
    try {
      const parsed = JSON.parse(text) as { detail?: unknown };
      if (typeof parsed.detail === 'string') detail = parsed.detail;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiFailure(res.status, detail);
  }
  opts.onHeaders?.(res.headers);
  if (opts.text) return text as T;
  return (text ? JSON.parse(text) : undefined) as T;
}
