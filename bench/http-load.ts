// HTTP load from autocannon in a separate process (so the load generator does not share the
// event loop of what it measures), and the line count of what a sink wrote.
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const AUTOCANNON = join(process.cwd(), 'node_modules', 'autocannon', 'autocannon.js');

export interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  '2xx': number;
  non2xx: number;
  errors: number;
  duration: number;
}

/** autocannon with `args` (its command line), its JSON result. */
export async function cannon(args: string[]): Promise<CannonResult> {
  const { stdout } = await exec(process.execPath, [AUTOCANNON, '-j', ...args], { maxBuffer: 64 << 20 });
  return JSON.parse(stdout) as CannonResult;
}

/** Newlines in a file, streamed (the output of a 30 s run is larger than one string can be). */
export async function countLines(file: string): Promise<number> {
  let n = 0;
  for await (const b of createReadStream(file) as AsyncIterable<Buffer>) for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) n++;
  return n;
}

/** The webhook stream both webhook scenarios load: 1 KB JSON bodies to NDJSON files in `out`. */
export const webhookIngestYaml = (out: string, filename: string) => `version: "1"
pipeline:
  name: ingest
  schedule: { type: stream }
  source: { type: webhook, path: ingest, max_queue_size: 10000 }
  serializer_in: { type: json }
  serializer_out: { type: ndjson }
  sinks: [{ type: local, path: ${JSON.stringify(out)}, filename_template: ${JSON.stringify(filename)} }]
`;

/** One webhook body: an alarm of about 1 KB. */
export const ALARM_BODY = JSON.stringify({ source: 'bench', kind: 'alarm', text: 'x'.repeat(960) });
