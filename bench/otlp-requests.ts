// The OTLP metrics request of the otlp-ingest bench (number b of its bodies): 2 resources, 10 gauges
// each, 3 attributes per point. Its own module so that a test can hold the one pass (scan.ts) to
// the bench's very shape without loading the bench's SDK legs.
import { requestType } from '../src/plugins/connectors/otlp/proto.js';

/** Body number `b` of `points` points (the bench's 1,000 by default). */
export function ingestRequest(b: number, points = 1000): Buffer {
  const T = requestType('metrics');
  const t = BigInt(1_790_000_000_000 + b * 1000) * 1_000_000n;
  const resourceMetrics = [0, 1].map((r) => ({
    resource: { attributes: [{ key: 'service.name', value: { stringValue: `router-${r}` } }] },
    scopeMetrics: [
      {
        scope: { name: 'svc-bench', version: '1' },
        metrics: Array.from({ length: 10 }, (_, m) => ({
          name: `if.metric.${m}`,
          unit: 'By',
          gauge: {
            dataPoints: Array.from({ length: points / 20 }, (_, i) => ({
              timeUnixNano: t.toString(),
              asDouble: i * 0.5 + b,
              attributes: [
                { key: 'ifIndex', value: { intValue: i } },
                { key: 'ifName', value: { stringValue: `ge-0/0/${i}` } },
                { key: 'host', value: { stringValue: `host-${(b + i) % 50}` } },
              ],
            })),
          },
        })),
      },
    ],
  }));
  return Buffer.from(T.encode(T.fromObject({ resourceMetrics })).finish());
}
