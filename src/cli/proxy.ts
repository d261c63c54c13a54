// `svc pipelines ...` and `svc runs ...`: the REST API from the command line (SVC_API_URL,
// SVC_API_KEY). Tables for people by default, `--json` for programs.
import { readFileSync } from 'node:fs';

export class ProxyError extends Error {}

export interface Ctx {
  url: string;
  apiKey?: string;
  json: boolean;
  out: (s: string) => void;
  /** Ends the request (svc top: a timeout, or the user quitting). */
  signal?: AbortSignal;
}

export async function call(ctx: Ctx, method: string, path: string, body?: { yaml?: string; json?: unknown }): Promise<unknown> {
  const headers: Record<string, string> = {};
  if (ctx.apiKey) headers['X-API-Key'] = ctx.apiKey;
  if (body?.yaml !== undefined) headers['content-type'] = 'application/yaml';
  if (body?.json !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(ctx.url.replace(/\/+$/, '') + path, {
      method,
      headers,
      body: body?.yaml ?? (body?.json !== undefined ? JSON.stringify(body.json) : undefined),
      signal: ctx.signal,
    });
  } catch (e) {
    throw unreachable(ctx.url, e);
  }
  const text = await res.text();
  let data: unknown = text;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    /* CSV or plain text */
  }
  if (!res.ok) throw refused(ctx, `${method} ${path}`, res.status, data, text);
  return data;
}

/** No answer from the daemon (connection refused, unknown host, ...): what to check. */
export function unreachable(url: string, e: unknown): ProxyError {
  const why = (e as Error & { cause?: Error }).cause?.message ?? (e as Error).message;
  return new ProxyError(`cannot reach the daemon at ${url} (${why}): is \`svc serve\` running? Set SVC_API_URL to its address.`);
}

/** The daemon's error answer ({detail}) as one line; a 401 without a key says which variable to set. */
export function refused(ctx: Pick<Ctx, 'apiKey'>, what: string, status: number, data: unknown, text: string): ProxyError {
  const detail = (data as { detail?: string } | undefined)?.detail ?? text;
  const hint = status === 401 && !ctx.apiKey ? " (SVC_API_KEY is not set in this shell: set it to the daemon's key)" : '';
  return new ProxyError(`${what}: ${status} ${detail}${hint}`);
}

/** Fixed-width columns; values that are objects print as JSON. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n') + '\n';
}

function show(ctx: Ctx, data: unknown, columns?: string[]) {
  if (ctx.json || !columns) ctx.out(JSON.stringify(data, null, 2) + '\n');
  else ctx.out(table(Array.isArray(data) ? (data as Record<string, unknown>[]) : [data as Record<string, unknown>], columns));
}

const need = (v: string | undefined, what: string): string => {
  if (!v) throw new ProxyError(`missing ${what}`);
  return v;
};
const enc = encodeURIComponent;

const PIPELINE_COLUMNS = [
  'name',
  'enabled',
  'status',
  'desired',
  'schedule_type',
  'records_in',
  'records_out',
  'in_per_s',
  'out_per_s',
  'last_run',
  'last_run_status',
];

interface LiveSummary {
  records_in: number;
  records_out: number;
  records_in_per_sec: number;
  records_out_per_sec: number;
}

/** A pipeline's row with its active run's live figures as columns ('-' when no run is active). */
function withLiveColumns(p: Record<string, unknown>): Record<string, unknown> {
  const l = p.live as LiveSummary | null | undefined;
  return { ...p, records_in: l?.records_in, records_out: l?.records_out, in_per_s: l?.records_in_per_sec, out_per_s: l?.records_out_per_sec };
}
const RUN_COLUMNS = ['run_id', 'pipeline', 'status', 'started_at', 'records_in', 'records_out', 'records_filtered', 'records_skipped', 'dlq_count', 'error'];

export const PROXY_HELP = `Commands against a running daemon (SVC_API_URL; unset: http://localhost:SVC_PORT, 8765 by default; SVC_API_KEY sent as X-API-Key):
  svc pipelines [list]                 pipeline summaries (a running run's counts and records/s, live)
  svc pipelines get NAME               config and live status
  svc pipelines create FILE            register a pipeline
  svc pipelines update NAME FILE       replace its config
  svc pipelines delete NAME
  svc pipelines start|stop|run NAME    start and stop are remembered across restarts
  svc pipelines versions NAME          stored versions, newest first
  svc pipelines rollback NAME VERSION
  svc runs [--pipeline P] [--status S] [--limit N]   (running runs show their live counts)
  svc runs get RUN_ID
  svc dlq ...                          dead letters: list, replay (svc dlq --help)
  svc top                              every pipeline's rates and errors, per stage, refreshed (svc top --help)
  svc tap NAME                         the records passing a stage, live (svc tap --help)
Add --json for JSON output.`;

export async function pipelinesCommand(args: string[], ctx: Ctx): Promise<void> {
  const [verb = 'list', a, b] = args;
  switch (verb) {
    case 'list': {
      const list = (await call(ctx, 'GET', '/api/pipelines')) as Record<string, unknown>[];
      return ctx.json ? show(ctx, list) : show(ctx, list.map(withLiveColumns), PIPELINE_COLUMNS);
    }
    case 'get': {
      const p = (await call(ctx, 'GET', `/api/pipelines/${enc(need(a, 'pipeline NAME'))}`)) as Record<string, unknown>;
      if (ctx.json) return show(ctx, p);
      show(ctx, withLiveColumns(p), [
        'name',
        'enabled',
        'status',
        'desired',
        'schedule_type',
        'version',
        'origin',
        'records_in',
        'records_out',
        'in_per_s',
        'out_per_s',
        'last_run',
        'last_run_status',
        'error',
      ]);
      return ctx.out(`\n${String(p.yaml)}`);
    }
    case 'create':
      return show(ctx, await call(ctx, 'POST', '/api/pipelines', { yaml: readFileSync(need(a, 'pipeline FILE'), 'utf8') }), ['name', 'status', 'version']);
    case 'update':
      return show(ctx, await call(ctx, 'PUT', `/api/pipelines/${enc(need(a, 'pipeline NAME'))}`, { yaml: readFileSync(need(b, 'pipeline FILE'), 'utf8') }), [
        'name',
        'status',
        'version',
      ]);
    case 'delete':
      await call(ctx, 'DELETE', `/api/pipelines/${enc(need(a, 'pipeline NAME'))}`);
      return ctx.json ? show(ctx, { name: a, deleted: true }) : ctx.out(`deleted ${a}\n`);
    case 'start':
    case 'stop':
    case 'run':
      return show(
        ctx,
        await call(ctx, 'POST', `/api/pipelines/${enc(need(a, 'pipeline NAME'))}/${verb}`),
        verb === 'run' ? ['name', 'status', 'run_id'] : ['name', 'status'],
      );
    case 'versions':
      return show(ctx, await call(ctx, 'GET', `/api/pipelines/${enc(need(a, 'pipeline NAME'))}/versions`), ['version', 'created_at', 'is_active']);
    case 'rollback':
      return show(ctx, await call(ctx, 'POST', `/api/pipelines/${enc(need(a, 'pipeline NAME'))}/rollback?version=${enc(need(b, 'VERSION'))}`), [
        'name',
        'status',
        'rolled_back_to_version',
      ]);
    default:
      throw new ProxyError(`unknown pipelines command '${verb}'\n${PROXY_HELP}`);
  }
}

export async function runsCommand(args: string[], opts: { pipeline?: string; status?: string; limit?: string }, ctx: Ctx): Promise<void> {
  if (args[0] === 'get') return show(ctx, await call(ctx, 'GET', `/api/runs/${enc(need(args[1], 'RUN_ID'))}`), RUN_COLUMNS);
  if (args[0] !== undefined) throw new ProxyError(`unknown runs command '${args[0]}'\n${PROXY_HELP}`);
  const q = new URLSearchParams();
  if (opts.pipeline) q.set('pipeline', opts.pipeline);
  if (opts.status) q.set('status', opts.status);
  if (opts.limit) q.set('limit', opts.limit);
  const qs = q.toString();
  return show(ctx, await call(ctx, 'GET', `/api/runs${qs ? '?' + qs : ''}`), RUN_COLUMNS);
}
