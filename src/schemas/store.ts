// The schema files under SVC_SCHEMA_DIR that /api/schemas lists, serves, stores and deletes.
// Every path a client names is relative to that folder and must stay inside it: `..`, absolute
// paths, backslashes and symlinks that lead outside are refused (status 400), so the API cannot
// read or delete anything else on the host.
import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { writeFileDurably } from '../util/durable.js';

/** Kinds of schema, inferred from the extension (spec doc 2, "Schema file"). */
export type SchemaType = 'protobuf' | 'avro' | 'json' | 'xml' | 'yaml' | 'other';

/**
 * Extensions an upload may have, and the type each one lists as. The spec's six, plus `.asn` and
 * `.asn1` for the `asn1` serializer's schema_file (type `other`: the spec's type list has no ASN.1).
 */
export const UPLOAD_EXTENSIONS: Readonly<Record<string, SchemaType>> = {
  '.proto': 'protobuf',
  '.avsc': 'avro',
  '.json': 'json',
  '.xsd': 'xml',
  '.yaml': 'yaml',
  '.yml': 'yaml',
  '.asn': 'other',
  '.asn1': 'other',
};

/** Largest schema file an upload may carry (413 above). */
export const SCHEMA_MAX_BYTES = 10 * 1024 * 1024;

/** First path segment an upload may not use: /api/schemas/registry/... is the registry proxy. */
export const RESERVED_TOP_DIR = 'registry';

export interface SchemaFile {
  /** Relative to the schema folder, `/`-separated. */
  path: string;
  type: SchemaType;
  size_bytes: number;
  /** Absolute path, usable as a pipeline's `schema_file`. */
  schema_file: string;
  /** Last modification, ISO 8601. */
  modified: string;
}

export class SchemaStoreError extends Error {
  override name = 'SchemaStoreError';
  constructor(
    readonly status: 400 | 404 | 409 | 413,
    message: string,
  ) {
    super(message);
  }
}

export const schemaType = (name: string): SchemaType => UPLOAD_EXTENSIONS[extname(name).toLowerCase()] ?? 'other';

const traversal = (what: string, p: string, why: string) => new SchemaStoreError(400, `${what} '${p}' ${why}: path traversal is refused`);

/**
 * The `/`-separated segments of a client path, or a 400 when it could leave the folder. `..` is
 * looked for in the decoded text (Fastify has decoded `%2e%2e` by now); `.` and empty segments
 * are dropped.
 */
export function relativeSegments(p: string, what = 'schema path'): string[] {
  if (p.includes('\\')) throw traversal(what, p, 'contains a backslash');
  if (p.includes('\0')) throw traversal(what, p, 'contains a NUL byte');
  if (p.startsWith('/') || /^[a-zA-Z]:/.test(p)) throw traversal(what, p, 'is absolute');
  const parts = p.split('/');
  if (parts.includes('..')) throw traversal(what, p, "climbs with '..'");
  return parts.filter((s) => s !== '' && s !== '.');
}

const within = (root: string, p: string) => p === root || p.startsWith(root + sep);

export class SchemaStore {
  /** Absolute schema folder. */
  readonly dir: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  /** Every file under the folder, recursively, sorted by path. Hidden entries (dot names) are skipped. */
  async list(): Promise<SchemaFile[]> {
    const root = await this.realRoot();
    if (root === undefined) return [];
    const out: SchemaFile[] = [];
    const walk = async (dir: string, rel: string[]) => {
      let entries: Dirent[];
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        return; // removed or unreadable meanwhile
      }
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        const full = join(dir, e.name);
        if (e.isDirectory()) await walk(full, [...rel, e.name]);
        else if (e.isFile() || e.isSymbolicLink()) {
          // A symlink is listed when it is a file inside the folder; linked folders are not
          // followed (no loops, no escape).
          const f = await this.describe(root, full, [...rel, e.name].join('/'));
          if (f) out.push(f);
        }
      }
    };
    await walk(root, []);
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** The absolute path of an existing file named relative to the folder (400 traversal, 404 missing). */
  async resolveFile(p: string): Promise<string> {
    const segs = relativeSegments(p);
    if (segs.length === 0) throw new SchemaStoreError(404, `schema file '${p}' not found: name a file under the schema folder`);
    const full = join(this.dir, ...segs);
    let real: string;
    try {
      real = await fs.realpath(full);
    } catch {
      throw new SchemaStoreError(404, `schema file '${segs.join('/')}' not found in ${this.dir}`);
    }
    const root = (await this.realRoot()) ?? this.dir;
    if (!within(root, real)) throw traversal('schema path', p, `is a symlink to ${real}, outside the schema folder`);
    const st = await fs.stat(real);
    if (!st.isFile()) throw new SchemaStoreError(404, `schema file '${segs.join('/')}' not found: it is a ${st.isDirectory() ? 'directory' : 'special file'}`);
    return full;
  }

  async read(p: string): Promise<Buffer> {
    return fs.readFile(await this.resolveFile(p));
  }

  async remove(p: string): Promise<void> {
    const full = await this.resolveFile(p);
    await fs.unlink(full);
  }

  /**
   * Stores `data` as `<subdir>/<filename>`, replacing a file of that name: written to a hidden
   * temporary file in the target folder, synced, then renamed, so readers (and pipelines starting
   * meanwhile) see the old file or the new one, never a part.
   */
  async save(filename: string, data: Buffer, subdir = ''): Promise<SchemaFile & { replaced: boolean }> {
    checkFilename(filename);
    const dirSegs = relativeSegments(subdir, 'subdir');
    if (dirSegs[0] === RESERVED_TOP_DIR) {
      throw new SchemaStoreError(400, `subdir '${subdir}' starts with '${RESERVED_TOP_DIR}', which is reserved: /api/schemas/${RESERVED_TOP_DIR}/... is the schema registry proxy`);
    }
    if (data.length > SCHEMA_MAX_BYTES) throw new SchemaStoreError(413, tooLarge());
    const targetDir = join(this.dir, ...dirSegs);
    await fs.mkdir(targetDir, { recursive: true });
    const root = (await this.realRoot()) ?? this.dir;
    const realTarget = await fs.realpath(targetDir);
    if (!within(root, realTarget)) throw traversal('subdir', subdir, `leads through a symlink to ${realTarget}, outside the schema folder`);

    const dest = join(realTarget, filename);
    let replaced = false;
    try {
      const st = await fs.lstat(dest);
      if (st.isDirectory()) throw new SchemaStoreError(409, `'${[...dirSegs, filename].join('/')}' is a directory in the schema folder; choose another name`);
      replaced = true;
    } catch (e) {
      if (e instanceof SchemaStoreError) throw e;
    }
    await writeFileDurably(dest, data, 0o644);
    const rel = [...dirSegs, filename].join('/');
    const f = await this.describe(root, join(this.dir, ...dirSegs, filename), rel);
    if (!f) throw new Error(`stored schema file ${dest} vanished`);
    return { ...f, replaced };
  }

  /** The folder's real path, or undefined when it does not exist yet. */
  private async realRoot(): Promise<string | undefined> {
    try {
      return await fs.realpath(this.dir);
    } catch {
      return undefined;
    }
  }

  private async describe(root: string, full: string, rel: string): Promise<SchemaFile | undefined> {
    try {
      const real = await fs.realpath(full);
      if (!within(root, real)) return undefined;
      const st = await fs.stat(real);
      if (!st.isFile()) return undefined;
      return { path: rel, type: schemaType(rel), size_bytes: st.size, schema_file: full, modified: st.mtime.toISOString() };
    } catch {
      return undefined; // dangling symlink, or removed meanwhile
    }
  }
}

export const tooLarge = () => `schema file is larger than the limit of ${SCHEMA_MAX_BYTES} bytes`;

/** An upload's file name: a plain name with an accepted extension. */
export function checkFilename(name: string): void {
  if (!name || name === '.' || name === '..' || /[\\/\0]/.test(name) || /[\x00-\x1f]/.test(name)) {
    throw new SchemaStoreError(400, `invalid file name '${name}': give a plain file name, without folders`);
  }
  if (name.startsWith('.')) throw new SchemaStoreError(400, `invalid file name '${name}': hidden names (starting with '.') are not listed and are refused`);
  const ext = extname(name).toLowerCase();
  if (!(ext in UPLOAD_EXTENSIONS)) {
    throw new SchemaStoreError(400, `file '${name}' has ${ext ? `extension '${ext}'` : 'no extension'}; accepted: ${Object.keys(UPLOAD_EXTENSIONS).join(', ')}`);
  }
}
