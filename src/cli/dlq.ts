// `svc dlq list|replay PIPELINE`: a pipeline's dead letters through the daemon's API
// (docs/dead-letters.md). Its options are its own, parsed here: main.ts hands it the arguments as
// they are.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { call, ProxyError, table, type Ctx } from './proxy.js';
import type { ListedEnvelope } from '../dlq/service.js';

export const DLQ_HELP = `Dead letters of a pipeline, through a running daemon (SVC_API_URL, SVC_API_KEY):
  svc dlq list PIPELINE [filters] [--replayed true|false] [--limit N] [--offset N]
  svc dlq replay PIPELINE [--id ID ...] [filters] [--patch FILE] [--set FIELD=EXPR ...] [--force]
Filters: --stage parse|transform|sink, --since T, --until T (ISO 8601 on _timestamp), --error TEXT
(in _error, any case), --run-id RUN_ID. --patch FILE: an RFC 6902 JSON Patch (JSON array) applied
to each record; --set FIELD=EXPR: an expression whose value replaces FIELD (after the patch).
A replay runs the pipeline on the selection (a run of its own) and answers when it has finished;
--force replays envelopes marked replayed already. Add --json for JSON output.
Exit status: 0 when everything selected was replayed (or was already), 1 otherwise.`;

const options = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  stage: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  error: { type: 'string' },
  'run-id': { type: 'string' },
  replayed: { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  id: { type: 'string', multiple: true },
  patch: { type: 'string' },
  set: { type: 'string', multiple: true },
  force: { type: 'boolean' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

function filtersOf(v: Values): Record<string, string> {
  const f: Record<string, string> = {};
  for (const k of ['stage', 'since', 'until', 'error'] as const) if (v[k] !== undefined) f[k] = v[k];
  if (v['run-id'] !== undefined) f.run_id = v['run-id'];
  return f;
}

function replayBody(v: Values): Record<string, unknown> {
  const body: Record<string, unknown> = { ...filtersOf(v) };
  if (v.id?.length) body.ids = v.id;
  if (v.force) body.force = true;
  if (v.patch) {
    try {
      body.patch = JSON.parse(readFileSync(v.patch, 'utf8'));
    } catch (e) {
      throw new ProxyError(`--patch ${v.patch}: ${(e as Error).message}`);
    }
  }
  if (v.set?.length) {
    body.set = Object.fromEntries(
      v.set.map((s) => {
        const eq = s.indexOf('=');
        if (eq < 1) throw new ProxyError(`--set '${s}': expected FIELD=EXPRESSION`);
        return [s.slice(0, eq), s.slice(eq + 1)];
      }),
    );
  }
  return body;
}

const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 3)}...` : s);

/** Returns the exit status. */
export async function dlqCommand(argv: string[], ctx: Omit<Ctx, 'json'>): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true });
  } catch (e) {
    throw new ProxyError(`${(e as Error).message}\n${DLQ_HELP}`);
  }
  const { values: v, positionals } = parsed;
  const [verb, pipeline] = positionals;
  if (v.help || !verb) {
    ctx.out(DLQ_HELP + '\n');
    return v.help ? 0 : 64;
  }
  if (!pipeline) throw new ProxyError(`missing PIPELINE\n${DLQ_HELP}`);
  const c = { ...ctx, json: !!v.json };
  const base = `/api/pipelines/${encodeURIComponent(pipeline)}/dlq`;
  if (verb === 'list') {
    const q = new URLSearchParams(filtersOf(v));
    for (const k of ['replayed', 'limit', 'offset'] as const) if (v[k] !== undefined) q.set(k, v[k]);
    const items = (await call(c, 'GET', `${base}${q.size ? `?${q}` : ''}`)) as ListedEnvelope[];
    if (c.json) c.out(JSON.stringify(items, null, 2) + '\n');
    else {
      const rows = items.map((e) => ({
        id: e.id,
        stage: e.envelope._stage,
        timestamp: e.envelope._timestamp,
        replayed: e.replayed_run_id ?? 'no',
        location: e.location,
        error: short(e.envelope._error, 80),
      }));
      c.out(table(rows, ['id', 'stage', 'timestamp', 'replayed', 'location', 'error']));
    }
    return 0;
  }
  if (verb === 'replay') {
    const r = (await call(c, 'POST', `${base}/replay`, { json: replayBody(v) })) as {
      run_id: string | null;
      status: string | null;
      records_in: number;
      records_out: number;
      replayed: string[];
      failed: { id: string; error: string }[];
      already_replayed: string[];
      unknown_ids: string[];
    };
    const ok = r.failed.length === 0 && r.unknown_ids.length === 0 && (r.status === null || r.status === 'success');
    if (c.json) {
      c.out(JSON.stringify(r, null, 2) + '\n');
      return ok ? 0 : 1;
    }
    c.out(r.run_id ? `replay run ${r.run_id}: ${r.status}, ${r.records_in} records in, ${r.records_out} out\n` : 'nothing to replay: no run\n');
    c.out(`${r.replayed.length} replayed, ${r.failed.length} not replayed, ${r.already_replayed.length} replayed before (--force replays them again)\n`);
    for (const f of r.failed) c.out(`  ${f.id}: ${f.error}\n`);
    for (const id of r.unknown_ids) c.out(`  ${id}: not in the DLQ (or left out by the filters)\n`);
    return ok ? 0 : 1;
  }
  throw new ProxyError(`unknown dlq command '${verb}'\n${DLQ_HELP}`);
}
