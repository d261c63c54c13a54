// Writes src/plugins/connectors/gnmi/gnmi-descriptor.ts from gnmi.proto beside it (protobufjs JSON,
// field names kept as in the .proto): the build copies no .proto, so the client loads this module.
// Run after editing gnmi.proto: npx tsx scripts/gen-gnmi-descriptor.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const dir = fileURLToPath(new URL('../src/plugins/connectors/gnmi/', import.meta.url));
const target = `${dir}gnmi-descriptor.ts`;
const root = protobuf.parse(readFileSync(`${dir}gnmi.proto`, 'utf8'), { keepCase: true }).root;
const header = readFileSync(target, 'utf8')
  .split('\n')
  .filter((l) => l.startsWith('//'))
  .join('\n');
writeFileSync(target, `${header}\nexport const GNMI_DESCRIPTOR: Record<string, unknown> = ${JSON.stringify(root.toJSON(), null, 2)};\n`);
