// The pipeline as a graph (issue 29, item 2): source → transforms → sinks, and the DLQ, with each
// stage's live figures while the pipeline runs (GET /api/pipelines/{name} `live.stages`, polled by
// the page). A box links to the Live tab tapped at that stage.
import type { PipelineConfigView, PipelineLive } from '../../api/types.js';
import { fmtAgo, fmtTime } from '../../lib/format.js';
import { href } from '../../lib/router.js';
import { layoutGraph, type GraphNode } from './graph-layout.js';

function Box({ n, pipeline }: { n: GraphNode; pipeline: string }) {
  const body = (
    <>
      <title>{n.tap ? `${n.title}: open the Live tab at this stage` : n.title}</title>
      <rect class="graph-box" x={n.x} y={n.y} width={n.w} height={n.h} rx={7} />
      <text class="graph-title" x={n.x + 10} y={n.y + 19}>
        {n.title}
      </text>
      {n.lines.map((l, i) => (
        <text key={i} class={`graph-line${l.tone ? ` tone-${l.tone}` : ''}`} x={n.x + 10} y={n.y + 30 + 13 + i * 17}>
          {l.full && <title>{l.full}</title>}
          <tspan>{l.text}</tspan>
        </text>
      ))}
    </>
  );
  const cls = `graph-node graph-${n.kind}${n.alert ? ' graph-alert' : ''}`;
  return n.tap ? (
    <a class={cls} href={href(['pipelines', pipeline], { tab: 'live', stage: n.tap })} data-testid={`graph-${n.id}`}>
      {body}
    </a>
  ) : (
    <g class={cls} data-testid={`graph-${n.id}`}>
      {body}
    </g>
  );
}

export function PipelineGraph({
  name,
  config,
  live,
  status,
}: {
  name: string;
  config: PipelineConfigView;
  live: PipelineLive | null | undefined;
  status: string;
}) {
  const g = layoutGraph(config, live?.stages);
  const figures = live?.stages !== undefined;
  return (
    <section class="graph-panel" data-testid="pipeline-graph">
      <div class="graph-head">
        <h2>Pipeline graph</h2>
        <span class="muted small" data-testid="graph-state">
          {live ? (
            figures ? (
              <span class="live-rate" title={`figures as counted at the last delivered chunk, ${fmtTime(live.updated_at)}`}>
                <span class="live-dot" aria-hidden="true" /> live, refreshed every 2 s · last delivery {fmtAgo(live.updated_at)} · rates over the last 10 s
              </span>
            ) : (
              'running: no records delivered yet; the figures appear with the first ones'
            )
          ) : (
            `not running (${status}): the configuration only; figures appear while it runs`
          )}
        </span>
      </div>
      <div class="graph-scroll">
        <svg class="graph" width={g.width} height={g.height} viewBox={`0 0 ${g.width} ${g.height}`} role="group" aria-label={`pipeline ${name} as a graph`}>
          <defs>
            <marker id="graph-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0 0 L10 5 L0 10 z" class="graph-arrowhead" />
            </marker>
            <marker id="graph-arrow-dead" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0 0 L10 5 L0 10 z" class="graph-arrowhead-dead" />
            </marker>
          </defs>
          {g.edges.map((e) => (
            <path
              key={e.id}
              class={e.dead ? 'graph-edge graph-edge-dead' : 'graph-edge'}
              d={e.d}
              marker-end={e.arrow ? (e.dead ? 'url(#graph-arrow-dead)' : 'url(#graph-arrow)') : undefined}
            />
          ))}
          {g.nodes.map((n) => (
            <Box key={n.id} n={n} pipeline={name} />
          ))}
        </svg>
      </div>
    </section>
  );
}
