// The schema files under SVC_SCHEMA_DIR that /api/schemas lists, serves, stores and deletes.
// Every path a client names is relative to that folder and must stay inside it: `..`, absolute
// paths, backslashes and symlinks that lead outside are refused (status 400), so the API cannot
// read or delete anything else on the host.
import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { writeFileDurably } from '../util/durable.js';
import { HttpError, httpError } from '../core/http-errors.js';

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

/**
 * Longest name of one folder or file, in UTF-8 bytes: what Linux file systems take (NAME_MAX). A
 * longer one failed deep in the file system (a 500 that showed the absolute path).
 */
export const MAX_NAME_BYTES = 255;
/** An upload is written to `.<name>.<12 hex>.tmp` first (writeFileDurably), which must fit MAX_NAME_BYTES too. */
export const MAX_FILENAME_BYTES = MAX_NAME_BYTES - '.'.length - '.123456789abc.tmp'.length;
/** Longest path under the schema folder, in UTF-8 bytes (well inside PATH_MAX with the folder itself). */
export const MAX_PATH_BYTES = 1024;

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

export const schemaType = (name: string): SchemaType => UPLOAD_EXTENSIONS[extname(name).toLowerCase()] ?? 'other';

const traversal = (what: string, p: string, why: string) => httpError('HTTP_SCHEMA_FILE_INVALID', `${what} '${p}' ${why}: path traversal is refused`);

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
  const segs = parts.filter((s) => s !== '' && s !== '.');
  // The name is not echoed: it may be kilobytes long.
  if (Buffer.byteLength(p) > MAX_PATH_BYTES)
    throw httpError('HTTP_SCHEMA_FILE_INVALID', `${what} is ${Buffer.byteLength(p)} bytes long; at most ${MAX_PATH_BYTES} bytes`);
  const long = segs.find((s) => Buffer.byteLength(s) > MAX_NAME_BYTES);
  if (long !== undefined)
    throw httpError(
      'HTTP_SCHEMA_FILE_INVALID',
      `${what} has a name of ${Buffer.byteLength(long)} bytes (${long.slice(0, 16)}...); each folder or file name may have at most ${MAX_NAME_BYTES} bytes`,
    );
  return segs;
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
    if (segs.length === 0) throw httpError('HTTP_SCHEMA_FILE_NOT_FOUND', `schema file '${p}' not found: name a file under the schema folder`);
    const full = join(this.dir, ...segs);
    let real: string;
    try {
      real = await fs.realpath(full);
    } catch {
      throw httpError('HTTP_SCHEMA_FILE_NOT_FOUND', `schema file '${segs.join('/')}' not found in ${this.dir}`);
    }
    const root = (await this.realRoot()) ?? this.dir;
    if (!within(root, real)) throw traversal('schema path', p, `is a symlink to ${real}, outside the schema folder`);
    const st = await fs.stat(real);
    if (!st.isFile())
      throw httpError('HTTP_SCHEMA_FILE_NOT_FOUND', `schema file '${segs.join('/')}' not found: it is a ${st.isDirectory() ? 'directory' : 'special file'}`);
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
      throw httpError(
        'HTTP_SCHEMA_FILE_INVALID',
        `subdir '${subdir}' starts with '${RESERVED_TOP_DIR}', which is reserved: /api/schemas/${RESERVED_TOP_DIR}/... is the schema registry proxy`,
      );
    }
    if (data.length > SCHEMA_MAX_BYTES) throw httpError('HTTP_BODY_TOO_LARGE', tooLarge());
    await fs.mkdir(this.dir, { recursive: true });
    const root = (await this.realRoot()) ?? this.dir;
    const realTarget = await this.makeSubdir(root, dirSegs, subdir);

    const dest = join(realTarget, filename);
    let replaced = false;
    try {
      const st = await fs.lstat(dest);
      if (st.isDirectory())
        throw httpError('HTTP_SCHEMA_FILE_CONFLICT', `'${[...dirSegs, filename].join('/')}' is a directory in the schema folder; choose another name`);
      replaced = true;
    } catch (e) {
      if (e instanceof HttpError) throw e;
    }
    await writeFileDurably(dest, data, 0o644);
    const rel = [...dirSegs, filename].join('/');
    const f = await this.describe(root, join(this.dir, ...dirSegs, filename), rel);
    if (!f) throw new Error(`stored schema file ${dest} vanished`);
    return { ...f, replaced };
  }

  /**
   * The real path of `segs` under `root`, creating the folders that are missing one at a time, each
   * only once its parent is known to be inside: a folder reached through a symlink that leads
   * outside is refused before anything is created there.
   */
  private async makeSubdir(root: string, segs: string[], subdir: string): Promise<string> {
    let at = root;
    for (const [i, seg] of segs.entries()) {
      const next = join(at, seg);
      let real: string;
      try {
        real = await fs.realpath(next);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        try {
          await fs.mkdir(next);
        } catch (e2) {
          // EEXIST: a dangling symlink (realpath failed, mkdir cannot create through it) or a racing upload.
          if ((e2 as NodeJS.ErrnoException).code !== 'EEXIST') throw e2;
        }
        real = await fs.realpath(next).catch(() => next);
      }
      if (!within(root, real)) throw traversal('subdir', subdir, `leads through a symlink at '${segs.slice(0, i + 1).join('/')}' to outside the schema folder`);
      const st = await fs.stat(real).catch(() => undefined);
      if (!st?.isDirectory())
        throw httpError('HTTP_SCHEMA_FILE_CONFLICT', `'${segs.slice(0, i + 1).join('/')}' is not a folder in the schema folder; choose another subdir`);
      at = real;
    }
    return at;
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
  // eslint-disable-next-line no-control-regex -- control characters are what this check refuses
  if (!name || name === '.' || name === '..' || /[\\/\0]/.test(name) || /[\x00-\x1f]/.test(name)) {
    throw httpError('HTTP_SCHEMA_FILE_INVALID', `invalid file name '${name}': give a plain file name, without folders`);
  }
  if (name.startsWith('.'))
    throw httpError('HTTP_SCHEMA_FILE_INVALID', `invalid file name '${name}': hidden names (starting with '.') are not listed and are refused`);
  const bytes = Buffer.byteLength(name);
  if (bytes > MAX_FILENAME_BYTES)
    throw httpError('HTTP_SCHEMA_FILE_INVALID', `file name of ${bytes} bytes (${name.slice(0, 16)}...) is too long: at most ${MAX_FILENAME_BYTES} bytes`);
  const ext = extname(name).toLowerCase();
  if (!(ext in UPLOAD_EXTENSIONS)) {
    throw httpError(
      'HTTP_SCHEMA_FILE_INVALID',
      `file '${name}' has ${ext ? `extension '${ext}'` : 'no extension'}; accepted: ${Object.keys(UPLOAD_EXTENSIONS).join(', ')}`,
    );
  }
}
