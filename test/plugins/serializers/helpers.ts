// Shared by the serializer tests: configs with their schema defaults, decoding through the real
// chunker, independent data from Python, and seeded randomness (failures name their seed).
import { execFileSync } from 'node:child_process';
import type { TObject } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { expect } from 'vitest';
import { chunksOf, type Chunk, type ChunkOptions } from '../../../src/engine/chunker.js';
import { loadPipelineText } from '../../../src/config/load.js';
import { formatDiagnostic } from '../../../src/config/diagnostics.js';
import type { ComponentConfig, PipelineConfig } from '../../../src/config/pipeline-schema.js';
import type { Decoder, Rec, SerializerPlugin } from '../../../src/plugins/types.js';

/** A full, valid config from partial parameters (schema defaults filled in). */
export function cfgOf<S extends TObject>(plugin: SerializerPlugin<S>, partial: Record<string, unknown> = {}) {
  const c = Value.Default(plugin.config, structuredClone(partial));
  expect([...Value.Errors(plugin.config, c)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
  return c as Parameters<NonNullable<SerializerPlugin<S>['decoder']>>[0];
}

// A relative schema_file is taken under the SVC_SCHEMA_DIR a test sets, as the engine does with the setting.
export const decoderOf = <S extends TObject>(p: SerializerPlugin<S>, partial: Record<string, unknown> = {}) =>
  p.decoder!(cfgOf(p, partial), { schemaDir: process.env.SVC_SCHEMA_DIR });
export const encoderOf = <S extends TObject>(p: SerializerPlugin<S>, partial: Record<string, unknown> = {}) =>
  p.encoder!(cfgOf(p, partial), { schemaDir: process.env.SVC_SCHEMA_DIR });

/** A whole pipeline (local source and sink) loaded by the real config loader with these serializers. */
export function pipelineWith(serializerIn: string, serializerOut = serializerIn, extra = ''): PipelineConfig {
  const yaml = `version: "1"
pipeline:
  name: ser-test
  schedule:
    type: interval
    interval_seconds: 60
  source:
    type: local
    path: /data/in
  serializer_in: ${serializerIn}
  serializer_out: ${serializerOut}
  sinks:
    - type: local
      path: /data/out
${extra}`;
  const r = loadPipelineText(yaml, { env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}

/** serializer_in and serializer_out of a pipeline loaded with `component` as both. */
export function loadedSerializers(component: string): { input: ComponentConfig; output: ComponentConfig } {
  const c = pipelineWith(component);
  return { input: c.serializer_in, output: c.serializer_out };
}

export interface ParseError {
  message: string;
  raw: Buffer;
}

export interface Decoded {
  records: Rec[];
  errors: ParseError[];
  /** Noted skips (a truncated file closed early). */
  notes: string[];
  chunks: Chunk[];
}

const asBuf = (raw: Buffer | string) => (typeof raw === 'string' ? Buffer.from(raw, 'utf8') : Buffer.from(raw));

/** Decodes one chunk as the engine hands it over. */
export function decodeChunk(
  d: Decoder,
  chunk: { data: Buffer; header?: Buffer; firstLine?: number },
  into: Decoded = { records: [], errors: [], notes: [], chunks: [] },
): Decoded {
  d.decode(
    { data: chunk.data, header: chunk.header, firstLine: chunk.firstLine ?? 1 },
    { record: (r) => into.records.push(r), error: (message, raw) => into.errors.push({ message, raw: asBuf(raw) }), note: (m) => into.notes.push(m) },
  );
  return into;
}

/** Decodes a whole unit the way the engine does: cut by the real chunker, then each chunk decoded. */
export async function decodeUnit(d: Decoder, input: AsyncIterable<Buffer> | Buffer | string, opts: Partial<ChunkOptions> = {}): Promise<Decoded> {
  const stream = typeof input === 'string' || Buffer.isBuffer(input) ? once(Buffer.from(input)) : input;
  const out: Decoded = { records: [], errors: [], notes: [], chunks: [] };
  for await (const chunk of chunksOf(stream, d.framing, { targetBytes: opts.targetBytes ?? 512 << 10, maxLines: opts.maxLines })) {
    out.chunks.push(chunk);
    // As process-chunk: an empty chunk without header is not decoded.
    if (chunk.error) out.errors.push({ message: chunk.error, raw: chunk.data });
    else if (chunk.data.length > 0 || chunk.header) decodeChunk(d, chunk, out);
  }
  return out;
}

export async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

/** mulberry32: small, seeded, good enough to pick split points. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const randInt = (r: () => number, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

/** The bytes in pieces of 1..maxPiece bytes (so splits fall anywhere, inside UTF-8 sequences too). */
export function piecesOf(buf: Buffer, r: () => number, maxPiece: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; ) {
    const n = randInt(r, 1, maxPiece);
    out.push(buf.subarray(i, i + n));
    i += n;
  }
  return out;
}

/** An async stream that yields `buf` split at random offsets. */
export async function* randomStream(buf: Buffer, r: () => number, maxPiece = 7): AsyncGenerator<Buffer> {
  for (const p of piecesOf(buf, r, maxPiece)) {
    await Promise.resolve();
    yield p;
  }
}

/** Runs a Python 3 snippet (stdin: `input`) and returns its stdout. */
export function py(code: string, input?: string | Buffer): Buffer {
  return execFileSync('python3', ['-c', code], { input, maxBuffer: 64 << 20 });
}

/** Runs a Python 3 snippet that prints one JSON document, and parses it. */
export function pyJson<T = unknown>(code: string, input?: string | Buffer): T {
  return JSON.parse(py(code, input).toString('utf8')) as T;
}

/** Offsets of the bytes of `b` that start a multi-byte UTF-8 sequence. */
export function multiByteStarts(b: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i < b.length; i++) if (b[i]! >= 0xc0) out.push(i);
  return out;
}
