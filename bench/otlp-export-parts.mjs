// otlp-export's floor: each part of the svc leg alone, in one process, against the SDK's serializer alone
// (200,000 points, the bench's records). Run after npm run bench has built .bench-build:
//   node scripts/supported-node.mjs --addons node bench/otlp-export-parts.mjs
// Prints points per CPU second of: NDJSON line parsing, mapping (encode.ts RecordMapper, results kept),
// encoding through the request path (buildRequest + encode), through the Writer (write-metrics.ts),
// and the SDK's ProtobufMetricsSerializer; and the bytes each encoding wrote.
import { RecordMapper, buildRequest } from '../.bench-build/src/plugins/connectors/otlp/encode.js';
import { writeMetricsRequest } from '../.bench-build/src/plugins/connectors/otlp/write-metrics.js';
import { requestType } from '../.bench-build/src/plugins/connectors/otlp/proto.js';
import { ProtobufMetricsSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
const STEPS = 200,
  M = 20,
  IFS = 50,
  T0 = 1_790_000_000_000;
const recs = [];
for (let s = 0; s < STEPS; s++)
  for (let m = 0; m < M; m++)
    for (let i = 0; i < IFS; i++)
      recs.push({
        hostname: 'router-0',
        name: `if.metric.${m}`,
        value: i * 0.5 + s + 0.25,
        timestamp: T0 + s * 1000,
        ifIndex: i,
        ifName: `ge-0/0/${i}`,
        host: `host-${(s + i) % 50}`,
      });
const text = recs.map((r) => JSON.stringify(r)).join('\n') + '\n';
const cpu = (f) => {
  const c0 = process.cpuUsage();
  f();
  const u = process.cpuUsage(c0);
  return (u.user + u.system) / 1e6;
};
const opts = {
  signal: 'metrics',
  nameField: 'name',
  valueFields: ['value'],
  timestampField: 'timestamp',
  excludeFields: [],
  resourceFields: { sysName: 'host.name', hostname: 'host.name' },
  resourceAttributes: {},
  counterFields: [],
  sumTemporality: 'cumulative',
  typeField: 'type',
  unitField: 'unit',
  bodyField: 'body',
  scopeName: 'svc',
  scopeVersion: '1',
};
const T = requestType('metrics');
const resource = resourceFromAttributes({ 'host.name': 'router-0' });
const batches = [];
for (let s = 0; s < STEPS; s++) {
  const t = T0 + s * 1000;
  const time = [Math.floor(t / 1000), (t % 1000) * 1e6];
  batches.push({
    resource,
    scopeMetrics: [
      {
        scope: { name: 'svc-bench' },
        metrics: Array.from({ length: M }, (_, m) => ({
          descriptor: { name: `if.metric.${m}`, description: '', unit: '', valueType: 1 },
          aggregationTemporality: 1,
          dataPointType: 3,
          dataPoints: Array.from({ length: IFS }, (_, i) => ({
            startTime: time,
            endTime: time,
            attributes: { ifIndex: i, ifName: `ge-0/0/${i}`, host: `host-${(s + i) % 50}` },
            value: i * 0.5 + s + 0.25,
          })),
        })),
      },
    ],
  });
}
for (let round = 0; round < 3; round++) {
  const out = {};
  let parsed;
  out.parse = cpu(() => {
    parsed = text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  });
  let mapped;
  const mapper = new RecordMapper(opts);
  out.map = cpu(() => {
    mapped = parsed.map((r) => mapper.map(r, Date.now()));
  });
  const chunks = [];
  for (let k = 0; k < mapped.length; k += 1000) chunks.push(mapped.slice(k, k + 1000));
  let n1 = 0,
    n2 = 0,
    n3 = 0;
  out.encode_request = cpu(() => {
    for (const c of chunks) n1 += T.encode(buildRequest('metrics', c)).finish().length;
  });
  out.encode_writer = cpu(() => {
    for (const c of chunks) n2 += writeMetricsRequest(c).length;
  });
  out.sdk_serialize = cpu(() => {
    for (const b of batches) n3 += ProtobufMetricsSerializer.serializeRequest(b).length;
  });
  for (const k in out) out[k] = Math.round(200000 / out[k]);
  console.log(JSON.stringify({ points_per_cpu_sec: out, bytes: [n1, n2, n3] }));
}
