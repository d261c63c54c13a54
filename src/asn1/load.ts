// Loads the ASN.1 modules of a schema_file: one file, or every *.asn / *.asn1 file of a directory
// (IMPORTS resolve across them). Compiled schemas are cached per path and modification time.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Schema } from './compile.js';
import { parseModules } from './parser.js';
import type { ModuleAst } from './ast.js';

const cache = new Map<string, { stamp: string; schema: Schema }>();
const ASN_FILE = /\.(asn1?|ASN1?)$/;

function filesOf(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  const files = readdirSync(path)
    .filter((f) => ASN_FILE.test(f))
    .sort()
    .map((f) => join(path, f));
  if (files.length === 0) throw new Error(`schema directory '${path}' holds no .asn or .asn1 file`);
  return files;
}

/** The compiled schema of a file or directory (absolute path). Throws Asn1SyntaxError / Asn1SchemaError. */
export function loadSchema(path: string): Schema {
  const files = filesOf(path);
  const stamp = files.map((f) => `${f}:${statSync(f).mtimeMs}`).join('|');
  const hit = cache.get(path);
  if (hit && hit.stamp === stamp) return hit.schema;
  const mods: ModuleAst[] = [];
  for (const f of files) mods.push(...parseModules(readFileSync(f, 'utf8'), f));
  const schema = new Schema(mods);
  cache.set(path, { stamp, schema });
  return schema;
}

/** A schema from module texts (tests, inline use). */
export function schemaOf(texts: Record<string, string>): Schema {
  return new Schema(Object.entries(texts).flatMap(([file, text]) => parseModules(text, file)));
}
