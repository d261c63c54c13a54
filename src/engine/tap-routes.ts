// The tap's WebSocket route (issue 29; src/engine/tap.ts), one definition for the API
// (GET /api/pipelines/{name}/tap, src/api/routes/tap.ts) and a worker's agent
// (GET /agent/pipelines/{name}/tap, src/cluster/worker.ts), which a manager relays: the same query,
// the same frames. Read-only and bounded: `rate` records per second at most, `limit` in all, and a
// client that reads slowly loses samples (counted in `dropped` frames) instead of holding the
// pipeline back. Frames, all JSON:
//   {"type":"tap", pipeline, stage, rate, limit, filter}   once, first
//   {"type":"status", running}                               first, then when it changes
//   {"type":"records", stage, records: [...]}                the samples, masked as the logs are
//   {"type":"dropped", count}                                samples not sent to a slow client
//   {"type":"end", reason}                                   then the socket closes (1000)
// A manager's relay adds `worker` to the records, dropped and status frames that come from a worker.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/websocket';
import type { WebSocket } from 'ws';
import { Type, type Static } from '@sinclair/typebox';
import { checkTapFilter, type TapHub, type TapOptions, type TapStage } from './tap.js';
import { sinkLabel } from './plan.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { httpError } from '../core/http-errors.js';
import { errorMessage } from '../core/errors.js';

export const TAP_DEFAULTS = { limit: 100, rate: 10 } as const;
export const TAP_MAX = { limit: 100_000, rate: 1000 } as const;
/** Past this many bytes waiting to be sent to a client, samples are dropped (and counted). */
export const TAP_SEND_BUFFER = 1 << 20;

/** Where a tap's samples go: the socket's side of a feed. */
export interface TapOut {
  /** Samples, each as JSON text; `worker` when they come from a worker (a manager's relay). */
  records(lines: string[], worker?: string): void;
  /** Any other frame, passed on as it is (a relay's worker `status` and `dropped` frames). */
  frame(o: object): void;
  /** The tap is over (its limit, the pipeline deleted): the socket says why and closes. */
  end(reason: string): void;
}

/** What a tap attaches to: the pipeline's TapHub here, or in manager mode the relay of its workers' taps. */
export interface TapFeed {
  /** Attaches; returns what detaches. */
  attach(opts: TapOptions, out: TapOut): () => void;
}

/** The feed of the runs of this process. */
export const hubFeed = (hub: TapHub): TapFeed => ({ attach: (opts, out) => hub.attach(opts, (lines) => out.records(lines), out.end) });

const TapQuery = Type.Object({
  stage: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description:
        '`source`, `transforms` (default: what leaves the global transforms), a sink by index (`0`, `sinks[0]`) or by type when only one sink has it, or `dlq`',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: TAP_MAX.limit, description: `Records in all; the tap ends after that many (default ${TAP_DEFAULTS.limit}).` }),
  ),
  rate: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: TAP_MAX.rate, description: `Records per second at most (default ${TAP_DEFAULTS.rate}).` })),
  filter: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'Only records for which this expression is true (the language of `filter`, docs/expressions.md).',
    }),
  ),
  token: Type.Optional(Type.String({ description: 'A session token, for browsers (they cannot send headers on a WebSocket).' })),
});
type TapQuery = Static<typeof TapQuery>;
type TapReq = FastifyRequest<{ Params: { name: string }; Querystring: TapQuery }>;

/** The stage a `stage` parameter names, or why it names none of the pipeline's. */
export function tapStageOf(config: Pick<PipelineConfig, 'sinks' | 'dlq'>, stage: string | undefined): TapStage {
  if (stage === undefined || stage === 'transforms') return 'transforms';
  if (stage === 'source') return 'source';
  if (stage === 'dlq') {
    if (!config.dlq) throw httpError('HTTP_BAD_REQUEST', "stage 'dlq': this pipeline has no dlq sink");
    return 'dlq';
  }
  const sinks = config.sinks;
  const index = /^(?:sinks\[)?(\d+)\]?$/.exec(stage);
  if (index) {
    const i = Number(index[1]);
    if (i < sinks.length) return i;
    throw httpError('HTTP_BAD_REQUEST', `stage '${stage}': the pipeline has ${sinks.length} sinks (0 to ${sinks.length - 1})`);
  }
  const byLabel = sinks.findIndex((s, i) => sinkLabel(s, i) === stage);
  if (byLabel >= 0) return byLabel;
  const byType = sinks.flatMap((s, i) => (s.type === stage ? [i] : []));
  if (byType.length === 1) return byType[0]!;
  const named = sinks.map((s, i) => `${i} (${s.type})`).join(', ');
  if (byType.length > 1) throw httpError('HTTP_BAD_REQUEST', `stage '${stage}': ${byType.length} sinks have this type; name one by index: ${named}`);
  throw httpError('HTTP_BAD_REQUEST', `unknown stage '${stage}': use source, transforms, dlq or a sink: ${named}`);
}

/** A stage as the `stage` parameter names it with no config at hand (a worker between runs): the names tapStageOf returns. */
function plainStage(stage: string | undefined): TapStage {
  if (stage === undefined || stage === 'transforms' || stage === 'source' || stage === 'dlq') return stage ?? 'transforms';
  const index = /^(?:sinks\[)?(\d+)\]?$/.exec(stage);
  if (index) return Number(index[1]);
  throw httpError('HTTP_BAD_REQUEST', `stage '${stage}': while the pipeline does not run here, name a stage as source, transforms, dlq or a sink index`);
}

/** How the query names a stage (what a relay passes on to workers). */
export const tapStageName = (stage: TapStage) => (typeof stage === 'number' ? `sinks[${stage}]` : stage);

export interface TapRouteOptions {
  path: string;
  tags: string[];
  /** The pipeline's config (throws its 404 when unknown); undefined when it is not known here yet (a worker with no run of it). */
  config(name: string): Pick<PipelineConfig, 'sinks' | 'dlq'> | undefined;
  /** Whether a run of the pipeline is active here (the `status` frames). */
  running(name: string): boolean;
  feed(name: string): TapFeed;
}

export function tapRoute(app: FastifyInstance, o: TapRouteOptions) {
  const stageOf = (name: string, stage: string | undefined) => {
    const config = o.config(name);
    return config ? tapStageOf(config, stage) : plainStage(stage);
  };
  app.get(
    o.path,
    {
      websocket: true,
      schema: {
        tags: o.tags,
        summary: 'WebSocket: live records at one stage (tap)',
        description: 'Samples of the records at a stage, masked as the logs are: frames tap, status, records, dropped, end. See docs/live.md.',
        params: Type.Object({ name: Type.String({ minLength: 1 }) }),
        querystring: TapQuery,
      },
      // Checked before the upgrade, so a bad request is an HTTP answer with {detail}.
      preValidation: async (req: TapReq) => {
        stageOf(req.params.name, req.query.stage);
        if (req.query.filter) {
          try {
            checkTapFilter(req.query.filter);
          } catch (e) {
            throw httpError('HTTP_BAD_REQUEST', `filter: ${errorMessage(e)}`);
          }
        }
      },
    },
    (socket: WebSocket, req: TapReq) => {
      const name = req.params.name;
      const q = req.query;
      const stage = stageOf(name, q.stage);
      const limit = q.limit ?? TAP_DEFAULTS.limit;
      const rate = q.rate ?? TAP_DEFAULTS.rate;
      const stageName = JSON.stringify(tapStageName(stage));
      let dropped = 0;
      const frame = (f: object) => socket.readyState === socket.OPEN && socket.send(JSON.stringify(f));
      frame({ type: 'tap', pipeline: name, stage: tapStageName(stage), rate, limit, filter: q.filter ?? null });
      let wasRunning = o.running(name);
      frame({ type: 'status', running: wasRunning });
      const detach = o.feed(name).attach(
        { stage, filter: q.filter, rate, limit },
        {
          records(lines, worker) {
            if (socket.readyState !== socket.OPEN) return;
            if (socket.bufferedAmount > TAP_SEND_BUFFER) {
              dropped += lines.length;
              return;
            }
            if (dropped) {
              frame({ type: 'dropped', count: dropped });
              dropped = 0;
            }
            // The records are JSON text already: put together, not parsed again.
            const from = worker === undefined ? '' : `,"worker":${JSON.stringify(worker)}`;
            socket.send(`{"type":"records","stage":${stageName}${from},"records":[${lines.join(',')}]}`);
          },
          frame,
          end(reason) {
            frame({ type: 'end', reason });
            socket.close(1000, reason.slice(0, 120));
          },
        },
      );
      const watch = setInterval(() => {
        const now = o.running(name);
        if (now !== wasRunning) frame({ type: 'status', running: (wasRunning = now) });
      }, 1000);
      watch.unref();
      socket.on('close', () => {
        clearInterval(watch);
        detach();
      });
      // A tap only sends; what a client sends is read and ignored (a ping keeps proxies from closing it).
      socket.on('message', () => {});
    },
  );
}
