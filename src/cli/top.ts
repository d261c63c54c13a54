// `svc top`: what every pipeline is doing, refreshed each second, like `vector top` (issue 29,
// docs/live.md). One GET /api/pipelines per refresh: a pipeline's row is its active run's `live`
// figures, and under it one row per stage from `live.stages`. On a terminal the view is redrawn in
// place on the alternate screen (q or Ctrl-C quits); piped, each refresh prints a table; --json
// prints each refresh as one JSON line.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { pipelineLive } from '../pipelines/live.js';
import { call, ProxyError, type Ctx } from './proxy.js';
import { usage } from './usage.js';

export const TOP_HELP = `svc top: every pipeline of a running daemon (SVC_API_URL, SVC_API_KEY) with its active run's
figures, and one row per stage under each pipeline that runs, refreshed each second.
  svc top [--interval S] [--once] [--json]
Columns: IN/S and OUT/S (records per second over the last 10 s; a stage's rate is OUT/S, the source's
IN/S), IN and OUT (records read and written; a transform's in and out, a sink's matched and written),
FILTERED (dropped on purpose), DLQ (dead letters), ERRORS (records failed at any stage: decode,
transform, sink writes failed for good), RETRIES (sink write retries). A sink whose circuit breaker
is open shows "circuit OPEN".
  --interval S   seconds between refreshes (default 1)
  --once         one snapshot, then exit
  --json         each refresh as one JSON line: {"time", "pipelines": [GET /api/pipelines]}
On a terminal the view is redrawn in place: q or Ctrl-C quits. Piped, a table per refresh.`;

type Live = NonNullable<ReturnType<typeof pipelineLive>>;
type Stages = NonNullable<Live['stages']>;

/** A pipeline as GET /api/pipelines lists it: the fields svc top shows. */
export interface Listed {
  name: string;
  status: string;
  live: Live | null;
}

type Field = 'name' | 'status' | 'in_s' | 'out_s' | 'in' | 'out' | 'filtered' | 'dlq' | 'errors' | 'retries';
type Row = { stage: boolean; name: string; status?: string } & Partial<Record<Exclude<Field, 'name' | 'status'>, number>>;

const COLUMNS: { field: Field; title: string; right?: boolean }[] = [
  { field: 'name', title: 'NAME' },
  { field: 'status', title: 'STATUS' },
  { field: 'in_s', title: 'IN/S', right: true },
  { field: 'out_s', title: 'OUT/S', right: true },
  { field: 'in', title: 'IN', right: true },
  { field: 'out', title: 'OUT', right: true },
  { field: 'filtered', title: 'FILTERED', right: true },
  { field: 'dlq', title: 'DLQ', right: true },
  { field: 'errors', title: 'ERRORS', right: true },
  { field: 'retries', title: 'RETRIES', right: true },
];
/** On a narrow terminal these columns go first, in this order, before names are shortened. */
const DROPPABLE: Field[] = ['retries', 'filtered', 'in', 'out'];
/** Columns are left out before names are shortened below this; names are never shortened below MIN_NAME. */
const KEEP_NAME = 24;
const MIN_NAME = 12;

const sum = (ns: number[]) => ns.reduce((a, b) => a + b, 0);

/** Records that failed at any stage: what the stage rows' ERRORS add up to. */
function stageErrors(s: Stages): number {
  return s.source.parse_errors + sum(s.transforms.map((t) => t.errors)) + sum(s.sinks.map((k) => k.failed + k.transform_errors)) + (s.dlq?.failed ?? 0);
}

/** The table's rows: each pipeline, then its stages when it has an active run. */
export function topRows(list: Listed[]): Row[] {
  const rows: Row[] = [];
  for (const p of list) {
    const l = p.live;
    const s = l?.stages;
    rows.push({
      stage: false,
      name: p.name,
      status: p.status,
      in_s: l?.records_in_per_sec,
      out_s: l?.records_out_per_sec,
      in: l?.records_in,
      out: l?.records_out,
      filtered: l?.records_filtered,
      dlq: l?.dlq_count,
      // Before its first chunk (or from a node that reports no stages) a run has only its skipped count.
      errors: l ? (s ? stageErrors(s) : l.records_skipped) : undefined,
      retries: s && sum(s.sinks.map((k) => k.retries)),
    });
    if (!s) continue;
    rows.push({ stage: true, name: `source (${s.source.type})`, in_s: s.source.per_sec, in: s.source.records, errors: s.source.parse_errors });
    for (const t of s.transforms)
      rows.push({ stage: true, name: t.label, out_s: t.per_sec, in: t.in, out: t.out, filtered: Math.max(0, t.in - t.out - t.errors), errors: t.errors });
    for (const k of s.sinks)
      rows.push({
        stage: true,
        name: k.label,
        status: k.circuit === 'open' ? 'circuit OPEN' : undefined,
        out_s: k.per_sec,
        in: k.matched,
        out: k.written,
        errors: k.failed + k.transform_errors,
        retries: k.retries,
      });
    if (s.dlq) rows.push({ stage: true, name: s.dlq.label, out_s: s.dlq.per_sec, dlq: s.dlq.records, errors: s.dlq.failed });
  }
  return rows;
}

const ESC = '\x1b[';
const sgr = (code: string) => (s: string) => `${ESC}${code}m${s}${ESC}0m`;
const style = { bold: sgr('1'), dim: sgr('2'), red: sgr('31'), green: sgr('32'), yellow: sgr('33'), alarm: sgr('1;41;97'), head: sgr('7') };

/** How a cell looks on a colour terminal: what needs a look stands out. */
function paint(field: Field, row: Row, text: string): string {
  if (!text.trim()) return text;
  if (field === 'status') {
    if (row.status === 'circuit OPEN') return style.alarm(text);
    if (row.status === 'running') return style.green(text);
    if (row.status === 'error') return style.red(text);
    return style.dim(text);
  }
  if (field === 'errors' && (row.errors ?? 0) > 0) return style.red(text);
  if (field === 'dlq' && (row.dlq ?? 0) > 0) return style.yellow(text);
  if (field === 'name') return row.stage ? text : style.bold(text);
  return text;
}

/** `s` cut to `width` characters, the cut marked. */
const cut = (s: string, width: number) => (s.length <= width ? s : width <= 1 ? s.slice(0, width) : `${s.slice(0, width - 1)}…`);

export interface View {
  /** The terminal's width: names are shortened and columns left out to fit (none: no limit). */
  columns?: number;
  color: boolean;
}

/** The table as lines: a header, then a line per row. */
export function topTable(list: Listed[], view: View): string[] {
  const rows = topRows(list);
  const text = (row: Row, f: Field): string => {
    if (f === 'name') return row.stage ? `  ${row.name}` : row.name;
    const v = row[f];
    // A pipeline without an active run shows '-'; a stage leaves blank what it does not have.
    return v === undefined ? (row.stage ? '' : '-') : String(v);
  };
  let cols = COLUMNS.map((c) => ({ ...c, width: Math.max(c.title.length, ...rows.map((r) => text(r, c.field).length)) }));
  const total = () => sum(cols.map((c) => c.width)) + 2 * (cols.length - 1);
  const name = cols[0]!;
  if (view.columns !== undefined) {
    const max = view.columns;
    const keep = Math.min(name.width, KEEP_NAME);
    for (const f of DROPPABLE) {
      if (total() - name.width + keep <= max) break;
      cols = cols.filter((c) => c.field !== f);
    }
    if (total() > max) name.width = Math.max(MIN_NAME, name.width - (total() - max));
  }
  const line = (cells: { field: Field; text: string; row?: Row }[]) => {
    const padded = cells.map((c, i) => {
      const col = cols[i]!;
      const t = cut(c.text, col.width);
      return col.right ? t.padStart(col.width) : t.padEnd(col.width);
    });
    const plain = padded.join('  ').trimEnd();
    // Still too wide (a very narrow terminal): the line is cut, and left plain so that no colour code is cut in two.
    if (view.columns !== undefined && plain.length > view.columns) return cut(plain, view.columns);
    if (!view.color) return plain;
    // The header in inverse video, gaps included, so that it reads as one bar.
    const header = !cells[0]?.row;
    return cells
      .map((c, i) => (c.row ? paint(c.field, c.row, padded[i]!) : style.head(padded[i]!)))
      .join(header ? style.head('  ') : '  ')
      .trimEnd();
  };
  return [
    line(cols.map((c) => ({ field: c.field, text: c.title }))),
    ...rows.map((row) => line(cols.map((c) => ({ field: c.field, text: text(row, c.field), row })))),
  ];
}

/** The line above the table. */
export function topHeader(list: Listed[], url: string, time: string): string {
  const running = list.filter((p) => p.live).length;
  return `svc top  ${url}  ${time}  ${list.length} pipeline${list.length === 1 ? '' : 's'}, ${running} running`;
}

const pad2 = (n: number) => String(n).padStart(2, '0');
const clock = (d: Date) => `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;

/** The terminal, taken over while svc top runs and given back as it was, however svc top ends. */
class Screen {
  private restored = false;
  constructor(private readonly onQuit: () => void) {
    process.stdout.write(`${ESC}?1049h${ESC}?25l`); // alternate screen, cursor hidden
    process.on('exit', this.restore);
    const input = process.stdin;
    if (input.isTTY) {
      // Raw mode: a key arrives as it is pressed (q), and Ctrl-C as a byte rather than SIGINT.
      input.setRawMode(true);
      input.on('data', this.onKey);
      input.resume();
    }
  }

  private readonly onKey = (b: Buffer) => {
    const k = b.toString('utf8');
    if (k === 'q' || k === 'Q' || k === '\x03' || k === '\x04') this.onQuit();
  };

  draw(lines: string[]) {
    const rows = process.stdout.rows || 24;
    const shown = lines.length > rows ? [...lines.slice(0, rows - 1), `… ${lines.length - rows + 1} more rows (a taller terminal shows them)`] : lines;
    // Home, each line over the old one (cleared to its end), then the rest of the old frame cleared: no flicker.
    process.stdout.write(`${ESC}H${shown.map((l) => `${l}${ESC}K`).join('\n')}${ESC}J`);
  }

  readonly restore = () => {
    if (this.restored) return;
    this.restored = true;
    process.off('exit', this.restore);
    const input = process.stdin;
    if (input.isTTY) {
      input.off('data', this.onKey);
      input.setRawMode(false);
      input.pause();
    }
    process.stdout.write(`${ESC}?25h${ESC}?1049l`);
  };
}

const options = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  once: { type: 'boolean' },
  interval: { type: 'string' },
} as const;

/** Returns the exit status. */
export async function topCommand(argv: string[], ctx: Omit<Ctx, 'json'>): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true });
  } catch (e) {
    usage(`${(e as Error).message} (svc top --help)`);
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    ctx.out(TOP_HELP + '\n');
    return 0;
  }
  if (positionals.length) usage(`top: unexpected argument '${positionals[0]}' (svc top --help)`);
  const interval = v.interval === undefined ? 1 : Number(v.interval);
  if (!(interval >= 0.1 && interval <= 3600)) usage(`--interval ${v.interval}: give the seconds between refreshes, from 0.1 to 3600`);

  const stop = new AbortController();
  // A daemon that accepts the connection but does not answer must not freeze the view.
  const timeoutMs = Math.max(5000, interval * 1000);
  const fetchList = async (): Promise<Listed[]> => {
    const req = new AbortController();
    const timer = setTimeout(() => req.abort(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    const quit = () => req.abort(new Error('stopped'));
    stop.signal.addEventListener('abort', quit, { once: true });
    try {
      return (await call({ ...ctx, json: true, signal: req.signal }, 'GET', '/api/pipelines')) as Listed[];
    } finally {
      clearTimeout(timer);
      stop.signal.removeEventListener('abort', quit);
    }
  };

  let list = await fetchList(); // unreachable at the start: the one line that says what to do, exit 1
  const tty = process.stdout.isTTY === true;
  const live = !v.json && !v.once && tty;
  const color = tty && !process.env.NO_COLOR;
  let error: string | undefined;
  let at = new Date();
  const screen = live ? new Screen(() => stop.abort()) : undefined;
  const draw = () => {
    if (v.json) return ctx.out(JSON.stringify({ time: at.toISOString(), pipelines: list }) + '\n');
    // Piped: no width limit (a file is as wide as its lines); `--once` on a terminal fits it.
    if (!screen)
      return ctx.out(
        [topHeader(list, ctx.url, at.toISOString()), ...topTable(list, { color, columns: tty ? process.stdout.columns || undefined : undefined }), ''].join(
          '\n',
        ) + '\n',
      );
    const columns = process.stdout.columns || 80;
    const head = cut(`${topHeader(list, ctx.url, clock(at))}  (q quits)`, columns);
    const problem = error === undefined ? [] : [style.red(cut(`${error} (retrying)`, columns))];
    screen.draw([color ? style.bold(head) : head, ...problem, '', ...topTable(list, { columns, color })]);
  };

  const onSignal = () => stop.abort();
  // `svc top --json | head -1`: the reader went away; stop quietly.
  const onOutError = (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' ? stop.abort() : undefined);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.stdout.on('error', onOutError);
  if (screen) process.stdout.on('resize', draw);
  try {
    for (;;) {
      draw();
      if (v.once) break;
      await sleep(Math.max(0, at.getTime() + interval * 1000 - Date.now()), undefined, { signal: stop.signal }).catch(() => {});
      if (stop.signal.aborted) break;
      try {
        list = await fetchList();
        error = undefined;
      } catch (e) {
        if (stop.signal.aborted) break;
        // On the screen the view stays and says what is wrong (a daemon restarting comes back); a script is told and stops.
        if (!screen || !(e instanceof ProxyError)) throw e;
        error = e.message;
      }
      at = new Date();
    }
  } finally {
    screen?.restore();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stdout.off('error', onOutError);
    process.stdout.off('resize', draw);
  }
  return 0;
}
