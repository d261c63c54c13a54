// `npm run docs`: writes the generated reference pages under docs/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generatedDocs } from '../src/docs/reference.js';

const root = join(import.meta.dirname, '..', 'docs');
for (const [path, text] of generatedDocs()) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
  process.stdout.write(`docs/${path}\n`);
}
