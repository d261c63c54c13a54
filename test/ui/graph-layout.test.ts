// The pipeline graph's layout (ui/src/pages/pipelines/graph-layout.ts), without a browser: every
// stage of the config has its box, no two boxes overlap, the arrows run from box to box, the
// figures of a running pipeline are written in, and long text is cut to its box.
import { describe, expect, it } from 'vitest';
import type { LiveStages, PipelineConfigView } from '../../ui/src/api/types.js';
import { LINE_CHARS, layoutGraph, type GraphNode } from '../../ui/src/pages/pipelines/graph-layout.js';

const config: PipelineConfigView = {
  source: { type: 'webhook', path: 'alarms' },
  transforms: [
    { type: 'filter', expression: "severity != 'info'" },
    { type: 'add_field', fields: { seen: "'yes'" } },
  ],
  sinks: [
    { type: 'local', condition: "severity == 'major' and region in ['north', 'south', 'east', 'west']" },
    { type: 'kafka' },
    { type: 'http', transforms: [{ type: 'rename' }] },
  ],
  dlq: { type: 'local' },
  on_error: 'dlq',
};

const stages: LiveStages = {
  source: { type: 'webhook', records: 1200, bytes: 2_500_000, parse_errors: 2, per_sec: 12.5 },
  transforms: [
    { label: 'transforms[0] (filter)', type: 'filter', in: 1198, out: 900, errors: 0, per_sec: 9 },
    { label: 'transforms[1] (add_field)', type: 'add_field', in: 900, out: 899, errors: 1, per_sec: 9 },
  ],
  sinks: [
    {
      label: 'sinks[0] (local)',
      type: 'local',
      matched: 300,
      transform_errors: 0,
      written: 300,
      failed: 0,
      writes: 30,
      retries: 0,
      bytes: 1000,
      circuit: 'closed',
      per_sec: 3,
    },
    {
      label: 'sinks[1] (kafka)',
      type: 'kafka',
      matched: 899,
      transform_errors: 0,
      written: 850,
      failed: 49,
      writes: 90,
      retries: 7,
      bytes: 90_000,
      circuit: 'open',
      per_sec: 0,
    },
    {
      label: 'sinks[2] (http)',
      type: 'http',
      matched: 899,
      transform_errors: 3,
      written: 896,
      failed: 0,
      writes: 9,
      retries: 0,
      bytes: 5,
      circuit: 'closed',
      per_sec: 8.9,
    },
  ],
  dlq: { label: 'dlq (local)', type: 'local', records: 55, parse: 2, transform: 1, sink: 49, failed: 0, per_sec: 0.4 },
};

const overlap = (a: GraphNode, b: GraphNode) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
const text = (n: GraphNode) => [n.title, ...n.lines.map((l) => l.text)].join('\n');

describe('the pipeline graph layout', () => {
  it('draws every stage of the config, in flow order, without overlaps, inside the drawing', () => {
    const g = layoutGraph(config);
    expect(g.nodes.map((n) => n.id)).toEqual(['source', 't0', 't1', 'sink0', 'sink1', 'sink2', 'dlq']);
    expect(g.nodes.map((n) => n.tap)).toEqual(['source', undefined, 'transforms', '0', '1', '2', 'dlq']);
    for (const a of g.nodes) {
      expect(a.x).toBeGreaterThanOrEqual(0);
      expect(a.y).toBeGreaterThanOrEqual(0);
      expect(a.x + a.w).toBeLessThanOrEqual(g.width);
      expect(a.y + a.h).toBeLessThanOrEqual(g.height);
      for (const b of g.nodes) if (a !== b) expect(overlap(a, b), `${a.id} and ${b.id}`).toBe(false);
    }
    const [src, t0, t1] = g.nodes;
    expect(src!.x < t0!.x && t0!.x < t1!.x).toBe(true);
    // Arrows: source → t0 → t1, t1 → each sink; dashed lines to the DLQ.
    expect(g.edges.filter((e) => !e.dead).map((e) => e.id)).toEqual(['e0', 'e1', 's0', 's1', 's2']);
    expect(g.edges.filter((e) => e.dead).length).toBeGreaterThan(0);
    // Without figures, the boxes say what is configured only.
    expect(text(g.nodes[0]!)).toContain('path alarms');
    expect(text(g.nodes[3]!)).toContain('if severity ==');
    expect(text(g.nodes[4]!)).toContain('every record');
    expect(text(g.nodes[5]!)).toContain('then rename');
    expect(g.nodes.map(text).join('\n')).not.toMatch(/\d\/s/);
  });

  it('writes the figures in, marks errors and an open circuit, and cuts long text with its whole in the tooltip', () => {
    const g = layoutGraph(config, stages);
    const by = (id: string) => g.nodes.find((n) => n.id === id)!;
    expect(text(by('source'))).toContain('records 1,200 · 13/s');
    expect(text(by('source'))).toContain('bytes 2.4 MB');
    expect(by('source').lines.find((l) => l.text === 'parse errors 2')?.tone).toBe('bad');
    expect(text(by('t0'))).toContain('in 1,198 → out 900');
    expect(by('t1').lines.find((l) => l.text === 'errors 1')?.tone).toBe('bad');
    expect(text(by('sink1'))).toContain('failed 49 · retries 7');
    expect(text(by('sink1'))).toContain('circuit OPEN');
    expect(by('sink1').alert).toBe(true);
    expect(by('sink0').alert).toBe(false);
    expect(text(by('sink2'))).toContain('transform errors 3');
    expect(text(by('dlq'))).toContain('from parse 2 · transform 1\nfrom sinks 49');
    const cond = by('sink0').lines[0]!;
    expect(cond.text.length).toBe(LINE_CHARS);
    expect(cond.text.endsWith('…')).toBe(true);
    expect(cond.full).toBe("if severity == 'major' and region in ['north', 'south', 'east', 'west']");
    for (const n of g.nodes) for (const l of n.lines) expect(l.text.length, l.text).toBeLessThanOrEqual(LINE_CHARS);
    // The sinks are as tall as their figures need, and still do not overlap.
    for (const a of g.nodes) for (const b of g.nodes) if (a !== b) expect(overlap(a, b), `${a.id} and ${b.id}`).toBe(false);
  });

  it('leaves the figures out when they are of another version of the config, and draws a lone source → sink', () => {
    const other = layoutGraph({ ...config, transforms: [] }, stages);
    expect(other.nodes.map(text).join('\n')).not.toMatch(/\d\/s/);
    const lone = layoutGraph({ source: { type: 'local' }, sinks: [{ type: 'local' }] });
    expect(lone.nodes.map((n) => n.id)).toEqual(['source', 'sink0']);
    expect(lone.edges).toHaveLength(1);
    expect(lone.edges[0]!.d).toMatch(/^M\S+ \S+ L/);
  });
});
