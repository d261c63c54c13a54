// The OTLP definitions: the generated descriptor (otlp-descriptor.ts) is the .proto files of
// src/plugins/connectors/otlp/proto/ (regenerate with scripts/gen-otlp-descriptor.ts). That they
// speak the SDK's wire is tested with its exporters (otlp-source.test.ts) and the test collector.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { OTLP_DESCRIPTOR } from '../../src/plugins/connectors/otlp/otlp-descriptor.js';

const dir = fileURLToPath(new URL('../../src/plugins/connectors/otlp/proto/', import.meta.url));

describe('otlp: the vendored definitions', () => {
  it('the descriptor is the .proto files as they are', () => {
    const root = new protobuf.Root();
    for (const f of ['common', 'resource', 'logs', 'metrics', 'trace', 'collector', 'status'])
      protobuf.parse(readFileSync(`${dir}${f}.proto`, 'utf8'), root, { keepCase: false });
    root.resolveAll();
    expect(JSON.parse(JSON.stringify(root.toJSON()))).toEqual(JSON.parse(JSON.stringify(OTLP_DESCRIPTOR)));
  });
});
