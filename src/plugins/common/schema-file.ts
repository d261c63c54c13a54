// Where a serializer's `schema_file` lives: a relative path is taken under SVC_SCHEMA_DIR (the folder
// /api/schemas manages; SerializerContext.schemaDir, given by the caller), an absolute one as given (the `schema_file` that /api/schemas/upload returns).
// A `..` segment is refused in either form, so a pipeline cannot reach outside by climbing.
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';

export class SchemaFileError extends Error {
  override name = 'SchemaFileError';
}

/** True when the path climbs with `..` (checked before normalising, which would hide it). */
export const climbs = (p: string): boolean => p.split(/[\\/]+/).includes('..');

/** The absolute path of a schema file; throws SchemaFileError on traversal or when it is missing. */
export function schemaPath(p: string, schemaDir: string | undefined): string {
  if (climbs(p)) throw new SchemaFileError(`schema path '${p}' climbs with '..': path traversal is refused`);
  if (!isAbsolute(p) && !schemaDir)
    throw new SchemaFileError(`schema file '${p}' is a relative path, and no schema folder (SVC_SCHEMA_DIR) was given to take it under: give an absolute path`);
  const full = isAbsolute(p) ? normalize(p) : join(schemaDir!, p);
  if (!existsSync(full)) {
    const where = isAbsolute(p) ? '' : ` (relative paths are taken under SVC_SCHEMA_DIR=${schemaDir})`;
    throw new SchemaFileError(`schema file '${full}' not found${where}`);
  }
  return full;
}

/** The text of a schema file (UTF-8). */
export function readSchemaFile(p: string, schemaDir: string | undefined): string {
  return readFileSync(schemaPath(p, schemaDir), 'utf8');
}
