// Source `rest` (batch): one HTTP request per run, or one per page with `paginate`. Each page is one
// unit: the JSON value at response_path (or the whole body) handed to serializer_in, so with the
// default json serializer an array becomes one record per element. A non-2xx answer, a timeout or a
// page that is not what the config says fails the run (the next scheduled run starts again from
// the first page); the runtime has no source retries.
import { Type, type Static } from '@sinclair/typebox';
import { SourceError } from '../../../core/errors.js';
import { connectionReporter } from '../../connector-runtime/reconnect.js';
import { defineSource, type LintIssue, type PluginContext, type SourceUnit } from '../../types.js';
import { describeTarget, excerpt, HttpClient, networkError, statusText, type HttpResponse } from '../../connector-runtime/http-client.js';
import { authHeaders, commonFields, lintCommon, lowerHeaders } from './client.js';

/** Pages one run reads at most: an API that never returns a short page must not loop forever. */
export const MAX_PAGES = 10_000;

const param = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);

const config = Type.Object(
  {
    url: commonFields.url,
    method: Type.Union([Type.Literal('GET'), Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH')], {
      default: 'GET',
      description: 'HTTP method; POST (or PUT, PATCH) for query APIs that take the query in the body.',
    }),
    headers: commonFields.headers,
    params: Type.Record(Type.String(), Type.Union([param, Type.Array(param)]), {
      default: {},
      description: 'Query parameters added to the URL (a list repeats the parameter); parameters already in url are kept.',
    }),
    body: Type.Optional(
      Type.Union([Type.String(), Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Unknown())], {
        description: 'Request body: an object or list is sent as JSON, a string as is; Content-Type application/json unless headers sets one.',
      }),
    ),
    auth_type: commonFields.auth_type,
    username: commonFields.username,
    password: commonFields.password,
    token: commonFields.token,
    api_key: commonFields.api_key,
    api_key_header: commonFields.api_key_header,
    timeout: commonFields.timeout,
    verify_ssl: commonFields.verify_ssl,
    response_path: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Dot path to the records in the JSON response (`data.items`; a number indexes a list: `results.0.rows`). Unset: the whole body (any serializer_in).',
      }),
    ),
    paginate: Type.Boolean({ default: false, description: 'Request page after page until a short page, an empty page or total_path says the end is reached.' }),
    page_param: Type.String({
      minLength: 1,
      default: 'offset',
      description:
        '`offset`: the query parameter `offset` counts records (0, page_size, 2 x page_size...); any other name is a page number from 1 (`page=1, 2, 3`).',
    }),
    page_size: Type.Integer({ minimum: 1, default: 100, description: 'Records per page, sent as page_size_param; a page with fewer records is the last one.' }),
    page_size_param: Type.String({
      default: 'limit',
      description: "Query parameter that carries page_size (`limit`, `per_page`, `size`); '' sends none. Our extension of doc 3.",
    }),
    total_path: Type.Optional(
      Type.String({ minLength: 1, description: 'Dot path to the total number of records in each page (`meta.total`): paging stops once that many were read.' }),
    ),
  },
  { additionalProperties: false },
);

type Config = Static<typeof config>;

function lint(c: Config): LintIssue[] {
  const out = lintCommon(c);
  if (c.total_path !== undefined && !c.paginate) out.push({ path: 'total_path', message: 'total_path is only used with paginate: true' });
  if (c.paginate) {
    if (c.page_size_param !== '' && c.page_size_param === c.page_param)
      out.push({ path: 'page_size_param', message: 'page_size_param must differ from page_param' });
    for (const name of [c.page_param, c.page_size_param]) {
      if (name && name in c.params) out.push({ path: `params.${name}`, message: `params.${name} is set by pagination on every request; remove it` });
    }
  }
  return out;
}

/** The value at a dot path (`a.b.0.c`); undefined when a step is missing. */
export function atPath(doc: unknown, path: string): unknown {
  let v = doc;
  for (const step of path.split('.')) {
    if (Array.isArray(v) && /^\d+$/.test(step)) v = v[Number(step)];
    else if (v !== null && typeof v === 'object' && !Array.isArray(v)) v = (v as Record<string, unknown>)[step];
    else return undefined;
  }
  return v;
}

function keysOf(doc: unknown): string {
  if (Array.isArray(doc)) return `a list of ${doc.length}`;
  if (doc !== null && typeof doc === 'object') return `keys: ${Object.keys(doc).slice(0, 10).join(', ') || 'none'}`;
  return `a ${typeof doc}`;
}

/** The request of one page: config params, then the paging parameters (page 1-based). */
export function pageUrl(c: Config, page?: { offset: number; number: number }): URL {
  const url = new URL(c.url);
  for (const [k, v] of Object.entries(c.params)) for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(one));
  if (page) {
    url.searchParams.set(c.page_param, String(c.page_param === 'offset' ? page.offset : page.number));
    if (c.page_size_param) url.searchParams.set(c.page_size_param, String(c.page_size));
  }
  return url;
}

function requestHeaders(c: Config): Record<string, string> {
  const wantsJson = c.paginate || c.response_path !== undefined;
  const base: Record<string, string> = { accept: wantsJson ? 'application/json' : '*/*' };
  if (c.body !== undefined) base['content-type'] = 'application/json';
  return lowerHeaders(base, c.headers, authHeaders(c));
}

const bodyOf = (c: Config) => (c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body));

/** One page: the request, its status judged; network problems and non-2xx become SourceErrors. */
async function fetchPage(
  http: HttpClient,
  c: Config,
  url: URL,
  signal: AbortSignal | undefined,
  on: { answer?: () => void; noAnswer?: (message: string) => void } = {},
): Promise<HttpResponse> {
  const target = describeTarget(c.method, url);
  let res: HttpResponse;
  try {
    res = await http.send({ method: c.method, url, headers: requestHeaders(c), body: bodyOf(c), signal });
  } catch (e) {
    const message = networkError(e, target, c.timeout);
    on.noAnswer?.(message);
    throw new SourceError(`rest: ${message}`, { cause: e });
  }
  on.answer?.();
  if (res.status < 200 || res.status > 299) {
    const where =
      res.status >= 300 && res.status < 400 && res.headers.location
        ? ` (redirects are not followed: it points to ${String(res.headers.location)}; set url to it)`
        : '';
    const hint = res.status === 401 || res.status === 403 ? ' (check auth_type and the credentials)' : '';
    const text = excerpt(res.body);
    throw new SourceError(`rest: ${target} returned ${statusText(res.status)}${where}${hint}${text ? `: ${text}` : ''}`);
  }
  return res;
}

function parseJson(res: HttpResponse, target: string): unknown {
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch (e) {
    throw new SourceError(
      `rest: ${target}: the response is not JSON (${(e as Error).message}), but response_path or paginate needs JSON: ${excerpt(res.body, 80)}`,
    );
  }
}

/** The records of a page: the value at response_path (or the whole document). */
function recordsOf(c: Config, doc: unknown, target: string): unknown {
  if (c.response_path === undefined) return doc;
  const v = atPath(doc, c.response_path);
  if (v === undefined) throw new SourceError(`rest: ${target}: response_path '${c.response_path}' is not in the response (${keysOf(doc)})`);
  return v;
}

export default defineSource({
  key: 'rest',
  summary: 'Read records from an HTTP(S) JSON API, with auth, response_path and offset or page-number pagination.',
  mode: 'batch',
  delivery: {
    guarantee: 'at-least-once',
    why: 'reading consumes nothing at the API: a run that fails (non-2xx, timeout, a sink failure) leaves everything where it was, and every run reads from the first page again, so records can be read twice but the source drops none.',
  },
  config,
  lint,
  examples: [
    {
      title: 'Alarms list behind a bearer token, one record per element of data.alarms',
      yaml: 'type: rest\nurl: https://nms.example.net/api/v1/alarms\nparams:\n  severity: critical\nauth_type: bearer\ntoken: ${NMS_TOKEN:-change-me}\nresponse_path: data.alarms',
    },
    {
      title: 'Offset pagination (offset=0,500,1000...&limit=500) until meta.total records',
      yaml: 'type: rest\nurl: https://inventory.example.net/api/devices\nauth_type: apikey\napi_key: ${INVENTORY_KEY:-change-me}\nresponse_path: items\npaginate: true\npage_size: 500\ntotal_path: meta.total',
    },
    {
      title: 'Page numbers (page=1,2,3...&per_page=100), basic auth, self-signed test server',
      yaml: 'type: rest\nurl: https://10.0.0.5:8443/rest/cells\nauth_type: basic\nusername: svc\npassword: ${CELLS_PASSWORD:-change-me}\nverify_ssl: false\nresponse_path: results\npaginate: true\npage_param: page\npage_size_param: per_page',
    },
  ],
  async test(c, { signal }) {
    const http = new HttpClient({ verifySsl: c.verify_ssl, timeoutS: c.timeout });
    try {
      const url = pageUrl(c, c.paginate ? { offset: 0, number: 1 } : undefined);
      const res = await fetchPage(http, c, url, signal);
      if (c.response_path !== undefined || c.paginate) {
        const target = describeTarget(c.method, url);
        const records = recordsOf(c, parseJson(res, target), target);
        if (c.paginate && !Array.isArray(records))
          throw new SourceError(`rest: ${target}: paginate needs a list at ${c.response_path ?? 'the top of the response'}, got ${keysOf(records)}`);
      }
    } finally {
      await http.close();
    }
  },
  create(c, ctx: PluginContext) {
    const http = new HttpClient({ verifySsl: c.verify_ssl, timeoutS: c.timeout });
    const report = connectionReporter(ctx, 'rest');
    const unit = (body: Buffer, url: URL, page: number, status: number): SourceUnit => ({
      meta: { source_path: url.toString(), rest_page: page, rest_status: status },
      size: body.length,
      async *read() {
        yield body;
      },
    });
    // Any HTTP answer means the server was reached; only an exchange without one is a lost connection.
    const get = (url: URL, signal: AbortSignal) =>
      fetchPage(http, c, url, signal, { answer: () => report('connected'), noAnswer: (m) => report('disconnected', m) });
    return {
      async *units(signal) {
        report('connecting');
        if (!c.paginate) {
          const url = pageUrl(c);
          const res = await get(url, signal);
          if (c.response_path === undefined) {
            yield unit(res.body, url, 1, res.status);
            return;
          }
          const target = describeTarget(c.method, url);
          yield unit(Buffer.from(JSON.stringify(recordsOf(c, parseJson(res, target), target))), url, 1, res.status);
          return;
        }
        let offset = 0;
        let previous: Buffer | undefined;
        for (let page = 1; !signal.aborted; page++) {
          if (page > MAX_PAGES)
            throw new SourceError(
              `rest: read ${MAX_PAGES} pages without reaching a short page or total_path's total; check page_param and page_size against the API`,
            );
          const url = pageUrl(c, { offset, number: page });
          const target = describeTarget(c.method, url);
          const res = await get(url, signal);
          const doc = parseJson(res, target);
          const records = recordsOf(c, doc, target);
          if (!Array.isArray(records))
            throw new SourceError(`rest: ${target}: paginate needs a list at ${c.response_path ?? 'the top of the response'}, got ${keysOf(records)}`);
          let total: number | undefined;
          if (c.total_path !== undefined) {
            const t = atPath(doc, c.total_path);
            const n = typeof t === 'string' && /^\d+$/.test(t) ? Number(t) : t;
            if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
              throw new SourceError(
                `rest: ${target}: total_path '${c.total_path}' is not a number in the response (${t === undefined ? keysOf(doc) : JSON.stringify(t)})`,
              );
            total = n;
          }
          if (records.length > 0 && previous?.equals(res.body)) {
            throw new SourceError(
              `rest: ${target}: page ${page} is the same as page ${page - 1}: the API ignores ${c.page_param}; set page_param to the parameter it pages by`,
            );
          }
          previous = res.body;
          if (records.length > 0) yield unit(c.response_path === undefined ? res.body : Buffer.from(JSON.stringify(records)), url, page, res.status);
          offset += records.length;
          if (records.length < c.page_size) return; // short or empty page: the last one
          if (total !== undefined && offset >= total) return;
        }
      },
      close: () => http.close(),
    };
  },
});
