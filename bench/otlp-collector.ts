// The test collector (test/connectors/peers/otlp.ts) in a process of its own, for otlp-export:
// the sender measured (the otlp sink or the SDK's exporter) then has its process to itself, and its
// CPU time is its own work only. Prints {"url"} once listening; counts the gauge data points it
// decodes (letting go of each request, so it holds no more than a few); when its stdin ends,
// prints {"points", "refused", "cpu_seconds"} and stops.
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOtlpCollector } from '../test/connectors/peers/otlp.js';

// The collector parses the vendored .proto files beside its source; the compiled bench
// (.bench-build) has none of them, so they are copied there from the repository (npm run bench
// runs from its root).
const protoDir = fileURLToPath(new URL('../src/plugins/connectors/otlp/proto/', import.meta.url));
if (!existsSync(join(protoDir, 'common.proto'))) cpSync(join(process.cwd(), 'src/plugins/connectors/otlp/proto'), protoDir, { recursive: true });

const c = await startOtlpCollector();
let points = 0;
const count = () => {
  for (const r of c.received.splice(0)) {
    const rms = (r.request.resource_metrics ?? []) as { scope_metrics?: { metrics?: { gauge?: { data_points?: unknown[] } }[] }[] }[];
    for (const rm of rms) for (const sm of rm.scope_metrics ?? []) for (const m of sm.metrics ?? []) points += m.gauge?.data_points?.length ?? 0;
  }
};
const timer = setInterval(count, 50);
const cpu0 = process.cpuUsage();
process.stdout.write(`${JSON.stringify({ url: c.httpUrl })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void (async () => {
    clearInterval(timer);
    count();
    const u = process.cpuUsage(cpu0);
    const refused = c.refused.length;
    await c.stop();
    process.stdout.write(`${JSON.stringify({ points, refused, cpu_seconds: Number(((u.user + u.system) / 1e6).toFixed(2)) })}\n`);
    process.exit(0);
  })();
});
