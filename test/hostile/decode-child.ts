// Decodes one file as the engine does and prints one JSON line: the records and parse errors that
// came out, the time taken and how far the peak RSS grew. `unit`: the file cut by the serializer's
// framing (chunks, split pieces); `message`: the file as one message (a webhook body). Each chunk
// goes through processChunk with the limits of SVC_DECODE_MAX_* from the environment. Run as a
// child process (decoders-binary.test.ts): an input that kills its process fails the test, not vitest.
//   node --import tsx test/hostile/decode-child.ts <serializer> <config JSON> <file> unit|message
import { readFileSync } from 'node:fs';
import { Value } from '@sinclair/typebox/value';
import { chunksOf } from '../../src/engine/chunker.js';
import { decodeLimits, type ChunkPlan } from '../../src/engine/plan.js';
import { processChunk, type ChunkInput } from '../../src/engine/process-chunk.js';
import { DEFAULT_CHUNK_BYTES } from '../../src/engine/runner.js';
import { serializers } from '../../src/plugins/registry.js';

const [key, cfgJson, file, mode] = process.argv.slice(2) as [string, string, string, 'unit' | 'message'];
const plugin = serializers.get(key)!;
const decoder = plugin.decoder!(Value.Default(plugin.config, JSON.parse(cfgJson)) as never);
const plan: ChunkPlan = { decoder, chain: [], sinks: [], copyForSinks: false, decodesJson: false, limits: decodeLimits() };
const data = readFileSync(file);
const meta = { source: 'hostile', unit: file };

const rssBefore = process.memoryUsage().rss;
const started = performance.now();
let records = 0;
const errors: { message: string; rawBytes: number }[] = [];
const take = (input: ChunkInput) => {
  const out = processChunk(plan, input, { keepRecords: false });
  records += out.recordsIn - out.parseErrors.length;
  for (const e of out.parseErrors) errors.push({ message: e.message, rawBytes: e.raw?.length ?? 0 });
};
if (mode === 'message') take({ data: new Uint8Array(0), messages: [data], firstLine: 1, meta });
else {
  async function* once() {
    yield data;
  }
  for await (const c of chunksOf(once(), decoder.framing, { targetBytes: DEFAULT_CHUNK_BYTES })) {
    if (c.data.length > 0 || c.header) take({ data: c.data, header: c.header, firstLine: c.firstLine, meta });
  }
}
const ms = performance.now() - started;
// maxRSS: the peak of the whole process, in KiB.
const rssGrowthMb = Math.max(0, process.resourceUsage().maxRSS * 1024 - rssBefore) / 1048576;
process.stdout.write(JSON.stringify({ records, errors, ms, rssGrowthMb }) + '\n');
