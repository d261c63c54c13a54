// A sink whose error quotes its password and a URL with credentials: neither reaches the run
// record, the DLQ envelope or the fatal error (the runtime masks what connectors say).
import { readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import type { Registry } from '../../src/config/load.js';
import { loadPipelineText } from '../../src/config/load.js';
import { WriteError } from '../../src/core/errors.js';
import { runPipeline } from '../../src/engine/runner.js';
import { secret } from '../../src/core/secrets.js';
import { defineSink } from '../../src/plugins/types.js';
import { tempDir } from '../helpers/fs.js';
import { testRegistry } from '../helpers/plugins.js';

const leaky = defineSink({
  key: 'leaky',
  summary: 'Test sink: fails quoting its secrets.',
  accepts: 'payload',
  delivery: { guarantee: 'at-least-once', why: 'test sink that never writes' },
  config: Type.Object({ url: Type.String({ description: 'u' }), password: secret('p') }, { additionalProperties: false }),
  examples: [],
  test: async () => {},
  create: (c) => ({
    async write() {
      throw new WriteError(`login refused for password ${c.password} at ${c.url}`, false);
    },
  }),
});
const registry: Registry = { ...testRegistry, sink: new Map([...testRegistry.sink, ['leaky', leaky]]) };

describe('secrets in run records and dead letters', () => {
  it('are masked', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'in'));
    writeFileSync(join(dir, 'in', 'r.ndjson'), '{"a":1}\n');
    const r = loadPipelineText(
      `version: "1"
pipeline:
  name: leaks
  schedule: { type: manual }
  source: { type: local, path: ${dir}/in }
  serializer_in: { type: ndjson }
  on_error: dlq
  dlq: { type: local, path: ${dir}/dlq, filename_template: d.ndjson }
  sinks: [{ type: leaky, url: "amqp://svc:url-pass-123@broker/v", password: "hunter2-secret" }]
`,
      { registry, env: {} },
    );
    const rec = await runPipeline(r.config!, { registry });
    expect(rec.dlq_count).toBe(1);
    const text =
      JSON.stringify(rec) +
      readdirSync(join(dir, 'dlq'))
        .map((f) => readFileSync(join(dir, 'dlq', f), 'utf8'))
        .join('');
    expect(text).toContain('login refused for password *** at amqp://svc:***@broker/v');
    expect(text).not.toContain('hunter2-secret');
    expect(text).not.toContain('url-pass-123');
  });
});
