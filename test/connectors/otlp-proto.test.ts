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

describe('otlp source: decoding a walked body', () => {
  it('writes every string as protobufjs reads it (the shared ones copied flat: BOMs and non-ASCII kept)', async () => {
    const { requestType } = await import('../../src/plugins/connectors/otlp/proto.js');
    const { decodeRequest } = await import('../../src/plugins/connectors/otlp/decode.js');
    const { walkRequest } = await import('../../src/plugins/connectors/otlp/walk.js');
    const texts = ['', 'a', 'ge-0/0/12', 'x'.repeat(200), 'Zürich', '\uFEFFbom first', 'mid\uFEFFbom', '😀 東京', 'ü'.repeat(70), 'tail ascii then é'];
    const T = requestType('logs');
    const buf = Buffer.from(
      T.encode(
        T.fromObject({
          resourceLogs: [
            {
              resource: { attributes: texts.map((t, i) => ({ key: `r${i}`, value: { stringValue: t } })) },
              scopeLogs: [
                {
                  scope: { name: 'scope-ü', version: '1' },
                  logRecords: texts.map((t, i) => ({
                    body: { stringValue: t },
                    severityText: t,
                    attributes: [{ key: `k${i}-${t}`, value: { stringValue: t } }],
                  })),
                },
              ],
            },
          ],
        }),
      ).finish(),
    );
    walkRequest('logs', buf, 1 << 20);
    const records: Record<string, unknown>[] = [];
    decodeRequest('logs', buf, { layout: 'flat' }, (r) => records.push(r));
    // What protobufjs' own reader (its UTF-8 check included) reads from the same bytes.
    const m = T.toObject(T.decode(new Uint8Array(buf))) as { resourceLogs: { scopeLogs: { logRecords: { body: { stringValue: string } }[] }[] }[] };
    expect(records.map((r) => r.body)).toEqual(m.resourceLogs[0]!.scopeLogs[0]!.logRecords.map((l) => l.body.stringValue));
    expect(records.map((r) => r.body)).toEqual(texts);
    texts.forEach((t, i) => {
      expect(records[i]!.severity_text ?? '').toBe(t);
      expect(records[i]![`k${i}-${t}`]).toBe(t);
      expect(records[0]![`resource.r${i}`]).toBe(t);
    });
    expect(records[0]!['scope.name']).toBe('scope-ü');
    // A string that is not UTF-8 never reaches the decoder (the copy could not keep it).
    const bad = Buffer.from(T.encode(T.fromObject({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityText: 'QQQQ' }] }] }] })).finish());
    bad.set([0xc3, 0x28, 0xff, 0x41], bad.indexOf('QQQQ'));
    expect(() => walkRequest('logs', bad, 1 << 20)).toThrow(/not UTF-8/);
  });
});
