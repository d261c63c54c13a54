// OpenTelemetry traces (spec doc 2: SVC_OTEL_ENDPOINT, SVC_OTEL_SERVICE). With an endpoint, one
// tracer provider per daemon exports spans in batches to an OTLP/gRPC collector: plaintext for
// http:// endpoints, TLS for https:// (and for a bare host:port). Without one, tracing is off and
// costs nothing: no provider, no hooks, no spans (`tracer` is undefined).
//
// Spans:
//  - one SERVER span per HTTP request, named `METHOD /route/:pattern` (traceRequests);
//  - one INTERNAL span `pipeline.run` per pipeline run (startRunSpan).
// The provider is not registered globally, so several daemons in one process (tests) each keep
// their own; spans are started with explicit parents where there is one (an incoming traceparent).
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { createRequire } from 'node:module';
import type * as OtlpGrpc from '@opentelemetry/exporter-trace-otlp-grpc';
import type * as Resources from '@opentelemetry/resources';
import type * as SdkBase from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type * as SdkNode from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorMessage } from '../core/errors.js';
import type { Settings } from '../settings.js';
import { version } from '../version.js';
import type { Logger } from './log.js';

export type { Tracer } from '@opentelemetry/api';

// The SDK and the exporter (CommonJS, with gRPC) are required only when tracing is on: loading them
// cost every daemon start about a tenth of its time (issue 18).
const require = createRequire(import.meta.url);

export interface Tracing {
  /** undefined when SVC_OTEL_ENDPOINT is empty (tracing off). */
  tracer: Tracer | undefined;
  /** Ends tracing: flushes the spans still queued to the collector (bounded), then closes the exporter. */
  shutdown(): Promise<void>;
}

/** How long shutdown() waits for the last export before giving up (a collector that is down). */
export const TRACING_SHUTDOWN_TIMEOUT_MS = 5000;

type TracingSettings = Pick<Settings, 'OTEL_ENDPOINT' | 'OTEL_SERVICE'> & Partial<Pick<Settings, 'NODE_ID'>>;

/** Creates the daemon's tracer from SVC_OTEL_ENDPOINT / SVC_OTEL_SERVICE (off when the endpoint is empty). */
export function startTracing(settings: TracingSettings, log: Logger, opts: { shutdownTimeoutMs?: number } = {}): Tracing {
  const endpoint = settings.OTEL_ENDPOINT.trim();
  if (!endpoint) return { tracer: undefined, shutdown: async () => {} };

  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-grpc') as typeof OtlpGrpc;
  const { defaultResource, resourceFromAttributes } = require('@opentelemetry/resources') as typeof Resources;
  const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof SdkBase;
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node') as typeof SdkNode;
  const tlog = log.child({ component: 'tracing' });
  const exporter = reportingExporter(new OTLPTraceExporter({ url: endpoint }), tlog);
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({
        'service.name': settings.OTEL_SERVICE || 'svc',
        'service.version': version,
        ...(settings.NODE_ID ? { 'service.instance.id': settings.NODE_ID } : {}),
      }),
    ),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('svc', version);
  tlog.info({ endpoint, service: settings.OTEL_SERVICE, tls: !endpoint.startsWith('http://') }, 'tracing enabled: exporting spans over OTLP/gRPC');

  let closing: Promise<void> | undefined;
  const limit = opts.shutdownTimeoutMs ?? TRACING_SHUTDOWN_TIMEOUT_MS;
  const shutdown = () =>
    (closing ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        provider.shutdown().then(
          () => false,
          (e: unknown) => {
            tlog.warn({ err: errorMessage(e) }, 'tracing shutdown failed');
            return false;
          },
        ),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(true), limit).unref())),
      ]);
      clearTimeout(timer);
      if (timedOut) tlog.warn({ endpoint, timeout_ms: limit }, 'trace collector did not accept the last spans in time; they are dropped');
    })());
  return { tracer, shutdown };
}

/** Logs failed exports (at most one warning a minute) instead of dropping them silently. */
function reportingExporter(inner: SpanExporter, log: Logger): SpanExporter {
  let lastWarn = 0;
  return {
    export(spans: ReadableSpan[], done) {
      inner.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0 (@opentelemetry/core).
        if (result.code !== 0 && Date.now() - lastWarn > 60_000) {
          lastWarn = Date.now();
          log.warn({ spans: spans.length, err: result.error ? errorMessage(result.error) : 'unknown' }, 'span export to the trace collector failed');
        }
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP requests

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-|$)/;

/** The context of a W3C `traceparent` header, so request spans join the caller's trace. */
export function parentFromTraceparent(header: string | string[] | undefined): Context {
  const m = typeof header === 'string' ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]!) || /^0+$/.test(m[3]!)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: m[2]!, spanId: m[3]!, traceFlags: parseInt(m[4]!, 16) & TraceFlags.SAMPLED, isRemote: true });
}

/**
 * Adds a SERVER span to every request of `app` (call it before routes are registered). Name:
 * `METHOD /route/:pattern` (just `METHOD` when no route matched); attributes after the HTTP
 * semantic conventions; status ERROR on 5xx. Does nothing when `tracer` is undefined.
 */
export function traceRequests(app: FastifyInstance, tracer: Tracer | undefined): void {
  if (!tracer) return;
  const spans = new WeakMap<FastifyRequest, { span: Span; error?: Error }>();
  app.addHook('onRequest', async (req) => {
    const route = req.routeOptions.url;
    const attributes: Attributes = {
      'http.request.method': req.method,
      'url.path': req.url.split('?')[0]!,
      'url.scheme': req.protocol,
      'client.address': req.ip,
    };
    if (route) attributes['http.route'] = route;
    const ua = req.headers['user-agent'];
    if (ua) attributes['user_agent.original'] = ua;
    const span = tracer.startSpan(
      route ? `${req.method} ${route}` : req.method,
      { kind: SpanKind.SERVER, attributes },
      parentFromTraceparent(req.headers.traceparent),
    );
    spans.set(req, { span });
  });
  app.addHook('onError', async (req, _reply, error) => {
    const s = spans.get(req);
    if (s) s.error = error;
  });
  app.addHook('onResponse', async (req, reply) => {
    const s = spans.get(req);
    if (!s) return;
    spans.delete(req);
    const status = reply.statusCode;
    s.span.setAttribute('http.response.status_code', status);
    if (status >= 500) {
      s.span.setAttribute('error.type', String(status));
      if (s.error) s.span.recordException(s.error);
      s.span.setStatus({ code: SpanStatusCode.ERROR, message: s.error?.message });
    }
    s.span.end();
  });
  app.addHook('onRequestAbort', async (req) => {
    const s = spans.get(req);
    if (!s) return;
    spans.delete(req);
    s.span.setAttribute('error.type', 'aborted');
    s.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection before the response' });
    s.span.end();
  });
}

// ---------------------------------------------------------------------------------------------
// Pipeline runs

export interface RunOutcome {
  status: string;
  records_in: number;
  records_out: number;
  records_filtered?: number;
  records_skipped: number;
  dlq_count: number;
  error?: string | null;
}

export interface RunSpan {
  /** Bindings for the run's logger: its lines carry the trace id. */
  readonly logBindings: { trace_id: string };
  /** Ends the span with the run's outcome (ERROR status when it failed). */
  end(run: RunOutcome): void;
  /** Ends the span when the run could not even be recorded. */
  fail(err: unknown): void;
}

/** Starts the `pipeline.run` span of a run; undefined when tracing is off. */
export function startRunSpan(tracer: Tracer | undefined, pipeline: string, runId: string): RunSpan | undefined {
  if (!tracer) return undefined;
  const span = tracer.startSpan('pipeline.run', { kind: SpanKind.INTERNAL, attributes: { pipeline, run_id: runId } }, ROOT_CONTEXT);
  let ended = false;
  return {
    logBindings: { trace_id: span.spanContext().traceId },
    end(run) {
      if (ended) return;
      ended = true;
      span.setAttributes({
        status: run.status,
        records_in: run.records_in,
        records_out: run.records_out,
        records_filtered: run.records_filtered ?? 0,
        records_skipped: run.records_skipped,
        dlq_count: run.dlq_count,
      });
      if (run.status === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, message: run.error ?? 'run failed' });
      else if (run.error) span.setAttribute('error', run.error);
      span.end();
    },
    fail(err) {
      if (ended) return;
      ended = true;
      span.recordException(err instanceof Error ? err : new Error(errorMessage(err)));
      span.setAttribute('status', 'failed');
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
      span.end();
    },
  };
}
