// GET /api/pipelines/{name}/tap: a WebSocket of live records at one stage of a pipeline (issue 29;
// src/engine/tap.ts). Read-only and bounded: `rate` records per second at most, `limit` in all, and
// a client that reads slowly loses samples (counted in `dropped` frames) instead of holding the
// pipeline back. Authentication is the API's (X-API-Key or a session token; a browser, which
// cannot set headers on a WebSocket, sends its session token as `?token=`). Frames, all JSON:
//   {"type":"tap", pipeline, stage, rate, limit, filter}   once, first
//   {"type":"status", running}                               first, then when it changes
//   {"type":"records", stage, records: [...]}                the samples, masked as the logs are
//   {"type":"dropped", count}                                samples not sent to a slow client
//   {"type":"end", reason}                                   then the socket closes (1000)
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/websocket';
import type { WebSocket } from 'ws';
import { Type, type Static } from '@sinclair/typebox';
import { checkTapFilter, type TapStage } from '../../engine/tap.js';
import { sinkLabel } from '../../engine/plan.js';
import type { PipelineConfig } from '../../config/pipeline-schema.js';
import { httpError } from '../../core/http-errors.js';
import { errorMessage } from '../../core/errors.js';
import type { ApiDeps } from '../deps.js';

export const TAP_DEFAULTS = { limit: 100, rate: 10 } as const;
export const TAP_MAX = { limit: 100_000, rate: 1000 } as const;
/** Past this many bytes waiting to be sent to a client, samples are dropped (and counted). */
export const TAP_SEND_BUFFER = 1 << 20;

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

export default async function tapRoutes(app: FastifyInstance, deps: ApiDeps) {
  const { manager } = deps;
  app.get(
    '/api/pipelines/:name/tap',
    {
      websocket: true,
      schema: {
        tags: ['pipelines'],
        summary: 'WebSocket: live records at one stage (tap)',
        description: 'Samples of the records at a stage, masked as the logs are: frames tap, status, records, dropped, end. See docs/live.md.',
        params: Type.Object({ name: Type.String({ minLength: 1 }) }),
        querystring: TapQuery,
      },
      // Checked before the upgrade, so a bad request is an HTTP answer with {detail}.
      preValidation: async (req: TapReq) => {
        const p = manager.get(req.params.name);
        tapStageOf(p.config, req.query.stage);
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
      const stage = tapStageOf(manager.get(name).config, q.stage);
      const limit = q.limit ?? TAP_DEFAULTS.limit;
      const rate = q.rate ?? TAP_DEFAULTS.rate;
      const stageName = typeof stage === 'number' ? `sinks[${stage}]` : stage;
      let dropped = 0;
      const frame = (o: object) => socket.readyState === socket.OPEN && socket.send(JSON.stringify(o));
      frame({ type: 'tap', pipeline: name, stage: stageName, rate, limit, filter: q.filter ?? null });
      const running = () => manager.has(name) && manager.get(name).active !== undefined;
      let wasRunning = running();
      frame({ type: 'status', running: wasRunning });
      const detach = manager.tapHub(name).attach(
        { stage, filter: q.filter, rate, limit },
        (lines) => {
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
          socket.send(`{"type":"records","stage":${JSON.stringify(stageName)},"records":[${lines.join(',')}]}`);
        },
        (reason) => {
          frame({ type: 'end', reason });
          socket.close(1000, reason.slice(0, 120));
        },
      );
      const watch = setInterval(() => {
        const now = running();
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
