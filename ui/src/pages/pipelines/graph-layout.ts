// The pipeline graph's boxes, lines and arrows, laid out from the config alone (so a stopped
// pipeline has its graph too) with the live stage figures written into the boxes when the pipeline
// runs. Pure (no DOM): test/ui/graph-layout.test.ts checks it without a browser.
import type { LiveStages, PipelineConfigView } from '../../api/types.js';
import { fmtInt as int, fmtRate as rate } from '../../lib/format.js';

export type Tone = 'bad' | 'muted' | 'ok';

export interface GraphLine {
  text: string;
  tone?: Tone;
  /** The whole text when `text` had to be cut to fit the box. */
  full?: string;
}

export interface GraphNode {
  id: string;
  kind: 'source' | 'transform' | 'sink' | 'dlq';
  /** The tap's `stage` that shows what leaves this box, when there is one. */
  tap?: string;
  title: string;
  lines: GraphLine[];
  /** Drawn in red: an open circuit breaker. */
  alert?: boolean;
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface GraphEdge {
  id: string;
  d: string;
  /** Failed records on their way to the dead-letter queue. */
  dead?: boolean;
  arrow: boolean;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  width: number;
  height: number;
}

export const BOX_W = 216;
const GAP_X = 44;
const GAP_Y = 14;
const PAD = 12;
const HEAD_H = 30;
const LINE_H = 17;
const BOX_PAD_B = 8;
/** What fits on one line of a box at 12 px (about 6.2 px a character in the 196 px inside it). */
export const LINE_CHARS = 30;

/** `text`, cut with an ellipsis to fit a line of a box (the whole text goes to the tooltip). */
export function fit(text: string, tone?: Tone, max = LINE_CHARS): GraphLine {
  const one = text.replace(/\s+/g, ' ').trim();
  if (one.length <= max) return tone ? { text: one, tone } : { text: one };
  return { text: `${one.slice(0, max - 1)}…`, full: one, ...(tone ? { tone } : {}) };
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}
/** A count that is an error when it is not zero. */
const errorCount = (label: string, n: number): GraphLine => ({ text: `${label} ${int(n)}`, tone: n > 0 ? 'bad' : 'muted' });

/** Where a source reads from, when one plain field says it (never a URL: it may carry credentials). */
function sourceDetail(c: { type: string; [k: string]: unknown }): GraphLine[] {
  for (const k of ['path', 'topic', 'topics', 'subject', 'queue', 'port']) {
    const v = c[k];
    if (typeof v === 'string' || typeof v === 'number') return [fit(`${k} ${v}`, 'muted')];
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return [fit(`${k} ${v.join(', ')}`, 'muted')];
  }
  return [];
}

function transformDetail(t: { type: string; [k: string]: unknown }): GraphLine[] {
  // The one field that says what a filter keeps; other transforms are named by their type.
  if (typeof t.expression === 'string') return [fit(t.expression, 'muted')];
  return [];
}

/**
 * The graph of a pipeline: source → each global transform → each sink (fanned out, its condition
 * in its box), and the DLQ below, fed by dashed lines from every stage that can fail. With
 * `stages` (the pipeline runs and has delivered a chunk) the boxes carry the figures.
 */
export function layoutGraph(config: PipelineConfigView, stages?: LiveStages): Graph {
  const transforms = config.transforms ?? [];
  // Figures only when they are of this config (a new version may have other stages than the run's).
  const s = stages && stages.transforms.length === transforms.length && stages.sinks.length === config.sinks.length ? stages : undefined;

  const main: Omit<GraphNode, 'x' | 'y' | 'w' | 'h'>[] = [];
  const src = s?.source;
  main.push({
    id: 'source',
    kind: 'source',
    tap: 'source',
    title: `source · ${config.source.type}`,
    lines: [
      ...sourceDetail(config.source),
      ...(src
        ? [
            { text: `records ${int(src.records)} · ${rate(src.per_sec)}` },
            { text: `bytes ${bytes(src.bytes)}`, tone: 'muted' as const },
            errorCount('parse errors', src.parse_errors),
          ]
        : []),
    ],
  });
  transforms.forEach((t, i) => {
    const f = s?.transforms[i];
    main.push({
      id: `t${i}`,
      kind: 'transform',
      // The tap sees what leaves the whole chain: the last transform's output.
      ...(i === transforms.length - 1 ? { tap: 'transforms' } : {}),
      title: fit(`transforms[${i}] · ${t.type}`).text,
      lines: [
        ...transformDetail(t),
        ...(f
          ? [{ text: `in ${int(f.in)} → out ${int(f.out)}` }, { text: `out ${rate(f.per_sec)}`, tone: 'muted' as const }, errorCount('errors', f.errors)]
          : []),
      ],
    });
  });
  const sinks: Omit<GraphNode, 'x' | 'y' | 'w' | 'h'>[] = config.sinks.map((k, i) => {
    const f = s?.sinks[i];
    const open = f?.circuit === 'open';
    const extra = (k.transforms?.length ?? 0) > 0 ? [fit(`then ${k.transforms!.map((t) => t.type).join(', ')}`, 'muted')] : [];
    return {
      id: `sink${i}`,
      kind: 'sink',
      tap: String(i),
      title: fit(`sinks[${i}] · ${k.type}`).text,
      alert: open,
      lines: [
        k.condition ? fit(`if ${k.condition}`, 'muted') : { text: 'every record', tone: 'muted' },
        ...extra,
        ...(f
          ? [
              { text: `matched ${int(f.matched)}` },
              { text: `written ${int(f.written)} · ${rate(f.per_sec)}`, ...(f.written > 0 ? { tone: 'ok' as const } : {}) },
              { text: `failed ${int(f.failed)} · retries ${int(f.retries)}`, tone: f.failed > 0 ? ('bad' as const) : ('muted' as const) },
              { text: `writes ${int(f.writes)} · ${bytes(f.bytes)}`, tone: 'muted' as const },
              ...(f.transform_errors > 0 ? [errorCount('transform errors', f.transform_errors)] : []),
              ...(open ? [{ text: 'circuit OPEN: writes skipped', tone: 'bad' as const }] : []),
            ]
          : []),
      ],
    };
  });
  const dlqCfg = config.dlq;
  const df = s?.dlq;
  const dlq: Omit<GraphNode, 'x' | 'y' | 'w' | 'h'> | undefined = dlqCfg && {
    id: 'dlq',
    kind: 'dlq',
    tap: 'dlq',
    title: fit(`dlq · ${dlqCfg.type}`).text,
    lines: [
      { text: 'dead letters of every stage', tone: 'muted' },
      ...(df
        ? [
            { text: `records ${int(df.records)} · ${rate(df.per_sec)}`, tone: df.records > 0 ? ('bad' as const) : undefined },
            { text: `from parse ${int(df.parse)} · transform ${int(df.transform)}`, tone: 'muted' as const },
            { text: `from sinks ${int(df.sink)}`, tone: 'muted' as const },
            errorCount('not written', df.failed),
          ]
        : []),
    ],
  };

  // Figures with large numbers are cut to the box too (the whole line in the tooltip).
  for (const n of [...main, ...sinks, ...(dlq ? [dlq] : [])]) n.lines = n.lines.map((l) => (l.full ? l : fit(l.text, l.tone)));
  const height = (n: { lines: GraphLine[] }) => HEAD_H + n.lines.length * LINE_H + BOX_PAD_B;
  // One height per row, so the boxes line up.
  const mainH = Math.max(...main.map(height));
  const sinkH = Math.max(...sinks.map(height));
  const sinksH = sinks.length * sinkH + (sinks.length - 1) * GAP_Y;
  const contentH = Math.max(mainH, sinksH);
  const colX = (c: number) => PAD + c * (BOX_W + GAP_X);
  const mainY = PAD + (contentH - mainH) / 2;
  const sinksY = PAD + (contentH - sinksH) / 2;
  const lastCol = main.length;

  const nodes: GraphNode[] = [
    ...main.map((n, c) => ({ ...n, x: colX(c), y: mainY, w: BOX_W, h: mainH })),
    ...sinks.map((n, i) => ({ ...n, x: colX(lastCol), y: sinksY + i * (sinkH + GAP_Y), w: BOX_W, h: sinkH })),
  ];
  const edges: GraphEdge[] = [];
  const midY = mainY + mainH / 2;
  for (let c = 0; c + 1 < main.length; c++) edges.push({ id: `e${c}`, d: `M${colX(c) + BOX_W} ${midY} L${colX(c + 1) - 2} ${midY}`, arrow: true });
  // The last main box fans out to every sink.
  const fromX = colX(lastCol - 1) + BOX_W;
  const toX = colX(lastCol) - 2;
  sinks.forEach((_, i) => {
    const y = sinksY + i * (sinkH + GAP_Y) + sinkH / 2;
    const bend = GAP_X / 2;
    edges.push({
      id: `s${i}`,
      d: y === midY ? `M${fromX} ${midY} L${toX} ${y}` : `M${fromX} ${midY} C${fromX + bend} ${midY} ${toX - bend} ${y} ${toX} ${y}`,
      arrow: true,
    });
  });

  let total = PAD + contentH + PAD;
  if (dlq) {
    const busY = PAD + contentH + 20;
    const dlqY = busY + 22;
    const dlqH = height(dlq);
    nodes.push({ ...dlq, x: colX(lastCol), y: dlqY, w: BOX_W, h: dlqH });
    const cx = (c: number) => colX(c) + BOX_W / 2;
    // Every main box drops to a bus under the graph; the sinks' column goes down into the DLQ.
    main.forEach((_, c) => edges.push({ id: `d${c}`, d: `M${cx(c)} ${mainY + mainH} L${cx(c)} ${busY}`, dead: true, arrow: false }));
    edges.push({ id: 'bus', d: `M${cx(0)} ${busY} L${cx(lastCol)} ${busY}`, dead: true, arrow: false });
    edges.push({ id: 'dsinks', d: `M${cx(lastCol)} ${sinksY + sinksH} L${cx(lastCol)} ${dlqY - 2}`, dead: true, arrow: true });
    total = dlqY + dlqH + PAD;
  }
  return { nodes, edges, width: colX(lastCol) + BOX_W + PAD, height: total };
}
