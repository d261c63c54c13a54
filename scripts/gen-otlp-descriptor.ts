// Writes src/plugins/connectors/otlp/otlp-descriptor.ts from the .proto files in otlp/proto/
// (protobufjs JSON, field names in lowerCamelCase as OTLP/JSON spells them): the build copies no
// .proto, so the connector loads this module. Run after editing a .proto:
// npx tsx scripts/gen-otlp-descriptor.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const dir = fileURLToPath(new URL('../src/plugins/connectors/otlp/', import.meta.url));
const target = `${dir}otlp-descriptor.ts`;
const root = new protobuf.Root();
for (const f of ['common', 'resource', 'logs', 'metrics', 'trace', 'collector', 'status'])
  protobuf.parse(readFileSync(`${dir}proto/${f}.proto`, 'utf8'), root, { keepCase: false });
root.resolveAll();
const header = [
  '// The OTLP definitions of otlp/proto/*.proto as protobufjs JSON (lowerCamelCase field names, as',
  '// OTLP/JSON spells them). Generated: edit the .proto files, then run',
  '// npx tsx scripts/gen-otlp-descriptor.ts (test/connectors/otlp-proto.test.ts checks both agree).',
].join('\n');
writeFileSync(target, `${header}\nexport const OTLP_DESCRIPTOR: Record<string, unknown> = ${JSON.stringify(root.toJSON())};\n`);
