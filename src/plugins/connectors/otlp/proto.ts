// The OTLP protobuf types (otlp-descriptor.ts, generated from proto/*.proto) loaded into one
// protobufjs root on first use, the gRPC paths of the three services, and per signal the names the
// source and sink share.
import protobuf from 'protobufjs';
import { OTLP_DESCRIPTOR } from './otlp-descriptor.js';

export type Signal = 'logs' | 'metrics' | 'traces';
export const SIGNALS: readonly Signal[] = ['logs', 'metrics', 'traces'];

/** Per signal: the HTTP path, the gRPC method path, the request and response types, the partial-success counter. */
export const SIGNAL_INFO: Record<Signal, { httpPath: string; grpcPath: string; request: string; response: string; rejectedField: string; partial: string }> = {
  logs: {
    httpPath: '/v1/logs',
    grpcPath: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
    request: 'opentelemetry.proto.collector.ExportLogsServiceRequest',
    response: 'opentelemetry.proto.collector.ExportLogsServiceResponse',
    rejectedField: 'rejectedLogRecords',
    partial: 'opentelemetry.proto.collector.ExportLogsPartialSuccess',
  },
  metrics: {
    httpPath: '/v1/metrics',
    grpcPath: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
    request: 'opentelemetry.proto.collector.ExportMetricsServiceRequest',
    response: 'opentelemetry.proto.collector.ExportMetricsServiceResponse',
    rejectedField: 'rejectedDataPoints',
    partial: 'opentelemetry.proto.collector.ExportMetricsPartialSuccess',
  },
  traces: {
    httpPath: '/v1/traces',
    grpcPath: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    request: 'opentelemetry.proto.collector.ExportTraceServiceRequest',
    response: 'opentelemetry.proto.collector.ExportTraceServiceResponse',
    rejectedField: 'rejectedSpans',
    partial: 'opentelemetry.proto.collector.ExportTracePartialSuccess',
  },
};

let root: protobuf.Root | undefined;
const types = new Map<string, protobuf.Type>();

/** The root of every OTLP type (loaded once). */
export function otlpRoot(): protobuf.Root {
  if (!root) {
    root = protobuf.Root.fromJSON(OTLP_DESCRIPTOR as protobuf.INamespace);
    root.resolveAll();
  }
  return root;
}

/** An OTLP message type by its full name (opentelemetry.proto.metrics.v1.Metric). */
export function otlpType(name: string): protobuf.Type {
  let t = types.get(name);
  if (!t) {
    t = otlpRoot().lookupType(name);
    types.set(name, t);
  }
  return t;
}

/** A request type's encoder and decoder for a signal. */
export const requestType = (s: Signal) => otlpType(SIGNAL_INFO[s].request);
export const responseType = (s: Signal) => otlpType(SIGNAL_INFO[s].response);

/** The bytes of a response: empty (full success) or with its partial_success. */
export function encodeResponse(s: Signal, rejected: number, message: string): Buffer {
  if (rejected === 0 && message === '') return Buffer.alloc(0);
  const info = SIGNAL_INFO[s];
  return Buffer.from(
    responseType(s)
      .encode({ partialSuccess: { [info.rejectedField]: rejected, errorMessage: message } })
      .finish(),
  );
}

/** The partial success of a response body (protobuf): rejected count and message; zero and '' for none. */
export function decodeResponse(s: Signal, body: Uint8Array): { rejected: number; message: string } {
  const m = responseType(s).decode(body) as unknown as { partialSuccess?: Record<string, unknown> };
  return partialOf(s, m);
}

/** The partial success of a response as an object (decoded protobuf or OTLP/JSON). */
export function partialOf(s: Signal, m: { partialSuccess?: Record<string, unknown> } | undefined): { rejected: number; message: string } {
  const p = m?.partialSuccess;
  if (!p) return { rejected: 0, message: '' };
  const r = p[SIGNAL_INFO[s].rejectedField];
  const rejected = r === undefined || r === null ? 0 : Number(typeof r === 'object' ? String(r) : r);
  return { rejected: Number.isFinite(rejected) ? rejected : 0, message: typeof p.errorMessage === 'string' ? p.errorMessage : '' };
}

/** google.rpc.Status with a RetryInfo detail (grpc-status-details-bin): what OTLP/gRPC throttling answers carry. */
export function retryStatusDetails(code: number, message: string, delayMs: number): Buffer {
  const retryInfo = otlpType('google.rpc.RetryInfo')
    .encode({ retryDelay: { seconds: Math.floor(delayMs / 1000), nanos: (delayMs % 1000) * 1e6 } })
    .finish();
  return Buffer.from(
    otlpType('google.rpc.Status')
      .encode({ code, message, details: [{ typeUrl: 'type.googleapis.com/google.rpc.RetryInfo', value: retryInfo }] })
      .finish(),
  );
}

/** The RetryInfo delay in ms of a grpc-status-details-bin value; undefined without one. */
export function retryDelayOf(details: Uint8Array | undefined): number | undefined {
  if (!details || details.length === 0) return undefined;
  try {
    const st = otlpType('google.rpc.Status').decode(details) as unknown as { details?: { typeUrl?: string; value?: Uint8Array }[] };
    for (const d of st.details ?? []) {
      if (d.typeUrl?.endsWith('/google.rpc.RetryInfo') && d.value) {
        const ri = otlpType('google.rpc.RetryInfo').decode(d.value) as unknown as { retryDelay?: { seconds?: unknown; nanos?: number } };
        if (!ri.retryDelay) return 0;
        return Number(String(ri.retryDelay.seconds ?? 0)) * 1000 + Math.round((ri.retryDelay.nanos ?? 0) / 1e6);
      }
    }
  } catch {
    return undefined;
  }
  return undefined;
}
