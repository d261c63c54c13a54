// `svc tap NAME`: the records passing one stage of a pipeline, as they pass, like `vector tap`
// (issue 29, docs/live.md). A client of GET /api/pipelines/{name}/tap (a WebSocket): records go to
// stdout, everything else (waiting for the pipeline, samples dropped, the end) to stderr, so that
// `--json` output is NDJSON and nothing else.
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { ProxyError, refused, unreachable, type Ctx } from './proxy.js';
import { usage } from './usage.js';

export const TAP_HELP = `svc tap: the records passing one stage of a pipeline of a running daemon (SVC_API_URL, SVC_API_KEY), sampled.
  svc tap NAME [--stage S] [--limit N] [--rate R] [--filter EXPR] [--json]
  --stage S      source (as decoded), transforms (default: what leaves the transforms), a sink (0,
                 sinks[0], or its type when only one sink has it), or dlq (dead-letter envelopes)
  --limit N      records in all, then the tap ends (default 100, at most 100000)
  --rate R       records per second at most (default 10, at most 1000)
  --filter EXPR  only records for which EXPR is true (the language of the filter transform)
  --json         one JSON record per line (NDJSON), nothing else on stdout
A tap on a pipeline that is not running waits for its next run. Exit status: 0 when the tap ends
(its limit reached) or on Ctrl-C; 1 when the daemon refuses the tap or the connection is lost;
64 for a usage error.`;

const options = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  stage: { type: 'string' },
  limit: { type: 'string' },
  rate: { type: 'string' },
  filter: { type: 'string' },
} as const;

/** The frames of the tap (src/api/routes/tap.ts). */
type Frame =
  | { type: 'tap'; pipeline: string; stage: string; rate: number; limit: number; filter: string | null }
  | { type: 'status'; running: boolean; worker?: string }
  | { type: 'records'; stage: string; records: unknown[] }
  | { type: 'dropped'; count: number }
  | { type: 'end'; reason: string };

const ESC = '\x1b[';
const pad = (n: number, w = 2) => String(n).padStart(w, '0');
/** The local time a sample arrived (frames carry none): what a person compares with the clock. */
const stamp = (d: Date) => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;

/** Returns the exit status. */
export async function tapCommand(argv: string[], ctx: Pick<Ctx, 'url' | 'apiKey'>): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true });
  } catch (e) {
    usage(`${(e as Error).message} (svc tap --help)`);
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    process.stdout.write(TAP_HELP + '\n');
    return 0;
  }
  const [name, extra] = positionals;
  if (!name) usage('tap: missing pipeline NAME (svc tap --help)');
  if (extra !== undefined) usage(`tap: unexpected argument '${extra}' (svc tap --help)`);

  const q = new URLSearchParams();
  for (const k of ['stage', 'limit', 'rate', 'filter'] as const) if (v[k] !== undefined) q.set(k, v[k]);
  const path = `/api/pipelines/${encodeURIComponent(name)}/tap`;
  const url = `${ctx.url.replace(/\/+$/, '').replace(/^http/, 'ws')}${path}${q.size ? `?${q}` : ''}`;
  const color = process.stdout.isTTY === true && !process.env.NO_COLOR;
  const out = process.stdout;
  const note = (s: string) => void process.stderr.write(`svc tap: ${s}\n`);

  const ws = new WebSocket(url, { headers: ctx.apiKey ? { 'X-API-Key': ctx.apiKey } : {} });
  return new Promise<number>((resolve, reject) => {
    let ended = false;
    let stopping = false;
    let running: boolean | undefined;
    let settled = false;
    const finish = (r: number | ProxyError) => {
      if (settled) return;
      settled = true;
      process.off('SIGINT', onStop);
      process.off('SIGTERM', onStop);
      out.off('error', onOutError);
      if (r instanceof ProxyError) reject(r);
      else resolve(r);
    };
    // Ctrl-C (or SIGTERM, or the reader of stdout gone): a clean close; a daemon that does not answer it is cut off.
    const onStop = () => {
      if (stopping) return;
      stopping = true;
      if (ws.readyState === WebSocket.CONNECTING) {
        ws.terminate();
        return finish(0);
      }
      ws.close(1000);
      setTimeout(() => ws.terminate(), 2000).unref();
    };
    const onOutError = (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' ? onStop() : finish(new ProxyError(`stdout: ${e.message}`)));
    process.on('SIGINT', onStop);
    process.on('SIGTERM', onStop);
    out.on('error', onOutError);

    // Refused before the upgrade (unknown pipeline or stage, bad filter, no key): the daemon's {detail}.
    ws.on('unexpected-response', (req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let data: unknown;
        try {
          data = JSON.parse(text);
        } catch {
          /* not JSON: the text itself */
        }
        finish(refused(ctx, `GET ${path}`, res.statusCode ?? 0, data, text));
        req.destroy();
      });
    });
    let opened = false;
    ws.on('open', () => (opened = true));
    // Before the upgrade: no daemon there. After it, the close that follows says what happened.
    ws.on('error', (e) => {
      if (!opened && !stopping) finish(unreachable(ctx.url, e));
    });
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString()) as Frame;
      switch (f.type) {
        case 'tap':
          // Sent once the tap is attached: from here on no record passing the stage is missed.
          return note(
            `pipeline ${f.pipeline}, stage ${f.stage}: ${f.rate} records/s at most, ${f.limit} in all${f.filter ? `, where ${f.filter}` : ''} (Ctrl-C stops)`,
          );
        case 'status':
          // In a cluster, frames tagged with a worker say how that worker's part goes; the pipeline's state is the untagged one.
          if (f.worker !== undefined) return;
          if (!f.running) note(`waiting: pipeline ${name} is not running (its records show when it runs)`);
          else if (running === false) note(`pipeline ${name} is running`);
          running = f.running;
          return;
        case 'records': {
          if (v.json) return void out.write(f.records.map((r) => JSON.stringify(r) + '\n').join(''));
          const t = stamp(new Date());
          const head = color ? `${ESC}2m${t}${ESC}0m ${ESC}36m${f.stage}${ESC}0m` : `${t} ${f.stage}`;
          return void out.write(f.records.map((r) => `${head} ${JSON.stringify(r)}\n`).join(''));
        }
        case 'dropped':
          return note(`${f.count} records not shown: this side read too slowly`);
        case 'end':
          ended = true;
          return note(`ended: ${f.reason}`);
      }
    });
    ws.on('close', (code, reason) => {
      if (ended || stopping) return finish(0);
      const why = code === 1001 ? 'the daemon is shutting down' : `code ${code}${reason.length ? `: ${reason.toString()}` : ''}`;
      finish(new ProxyError(`the tap on ${name} was closed before its end (${why})`));
    });
  });
}
