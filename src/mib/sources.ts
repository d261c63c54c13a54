// The MIB sources on disk: uploaded sources in source groups (SVC_MIB_SOURCE_DIR/<group>/<file>),
// read-only bundled sources (SVC_MIB_BUNDLED_SOURCE_DIR, several dirs, plus the product's own
// mibs/), the names they may have, and the compile mode recorded per uploaded file.
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpError } from '../core/http-errors.js';
import { readJsonFile, writeFileDurably } from '../util/durable.js';
import { sourceLimitFailure, type MibSource } from './compiler.js';
import { MIB_LIMIT_SETTINGS, type MibLimits, type ModuleFailure } from './types.js';

export interface UploadFile {
  /** The file name as uploaded (no directories). */
  name: string;
  data: Buffer;
}

export type CompileMode = 'full' | 'partial';

/** A source file as listed: its store path `<group>/<file>`, where it is and what it is. */
export interface SourceFile {
  path: string;
  group: string;
  file: string;
  abs: string;
  bundled: boolean;
  size: number;
  mtimeMs: number;
}

/** A bundled directory in source order, with its group name. */
export interface BundledDir {
  dir: string;
  group: string;
}

/** Extensions a MIB source may have (spec doc 2: `.mib`, `.my`, `.txt` or none). */
export const MIB_SOURCE_EXTENSIONS = ['.mib', '.txt', '.my', ''];
/** Largest single source file an upload or fetch may store (413 above). */
export const MIB_MAX_FILE_BYTES = 4 << 20;
/** Upload source groups: a folder name; `bundled*` is reserved for the read-only sources. */
const GROUP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** No folders, no control characters (they cannot go into a Content-Disposition header or a log line). */
// eslint-disable-next-line no-control-regex -- control characters are what this pattern refuses
const FILE_NAME = /^[^/\\\x00-\x1f\x7f]{1,200}$/;
/**
 * Longest file name in UTF-8 bytes: file systems allow 255, and writeFileDurably's temp file beside
 * it adds 18 (`.<name>.<12 hex digits>.tmp`), kept under 255 with room to spare.
 */
const FILE_NAME_BYTES = 200;
/** The product's own bundled modules (mibs/ in the package). */
export const PRODUCT_MIB_DIR = fileURLToPath(new URL('../../mibs/', import.meta.url));
const MODES = '.svc-modes.json';

export const hasExt = (name: string) => MIB_SOURCE_EXTENSIONS.includes(extname(name).toLowerCase());
const isSourceName = (name: string) => !name.startsWith('.') && hasExt(name) && FILE_NAME.test(name);

/** Group name check (400 with what is allowed). */
export function checkGroup(group: string): string {
  if (!GROUP_NAME.test(group) || group.startsWith('bundled')) {
    throw httpError(
      'HTTP_MIB_UPLOAD_INVALID',
      `source group '${group}' is not allowed: use 1-64 letters, digits, '.', '_' or '-' (not starting with 'bundled', which names the read-only sources)`,
    );
  }
  return group;
}

/** A store path `<group>/<file>` split and checked; anything else (absolute, `..`, deeper) is 400. */
export function splitStorePath(p: string): { group: string; file: string } {
  const parts = p.split('/');
  if (p.includes('\\') || p.includes('\0') || parts.length !== 2 || parts.some((x) => x === '' || x === '.' || x === '..')) {
    throw httpError(
      'HTTP_MIB_UPLOAD_INVALID',
      `path '${p}' escapes the MIB store or is not a source path: give '<group>/<file>' as listed in source_inventory`,
    );
  }
  return { group: parts[0]!, file: parts[1]! };
}

/** The modules a text defines, by their headers (cheap; no full parse). */
export function definedModules(text: string): string[] {
  // A leading UTF-8 byte order mark would keep the `^` of the first header from matching.
  // (`[^}]` is bounded: unbounded, each line `A {` would scan to the next `}`, quadratic in lines)
  return [...text.replace(/^\uFEFF/, '').matchAll(/^[ \t]*([A-Za-z][A-Za-z0-9-]*)[ \t\r\n]+(?:\{[^}]{0,1024}\}[ \t\r\n]*)?DEFINITIONS\b/gm)].map((m) => m[1]!);
}

/** The bundled directories that exist, most specific first and the product's own last, each once. */
export function bundledDirs(dirsGiven: string[]): BundledDir[] {
  const seen = new Set<string>();
  const dirs: BundledDir[] = [];
  const add = (dir: string, group: string) => {
    const abs = resolve(dir);
    if (seen.has(abs) || !existsSync(abs)) return;
    seen.add(abs);
    dirs.push({ dir: abs, group });
  };
  dirsGiven.forEach((d, i) => add(d, `bundled-${i + 1}`));
  add(PRODUCT_MIB_DIR, 'bundled');
  return dirs;
}

/** The source folders: listing, reading and writing sources, and the compile mode of each uploaded file. */
export class MibSources {
  /** Uploaded file path -> its compile mode, when not full (kept in SVC_MIB_SOURCE_DIR/.svc-modes.json). */
  modes: Record<string, CompileMode> = {};

  constructor(
    readonly sourceDir: string,
    readonly bundled: BundledDir[],
    private readonly limits: MibLimits,
  ) {}

  async loadModes() {
    this.modes = (await readJsonFile<Record<string, CompileMode>>(join(this.sourceDir, MODES)).catch(() => undefined)) ?? {};
  }

  /** An upload's files checked before anything is read or written: names, extensions, sizes (4xx). */
  checkUpload(files: UploadFile[]) {
    if (!files.length) throw httpError('HTTP_MIB_UPLOAD_INVALID', 'no files: send one or more MIB sources as files[] (.mib, .txt, .my or no extension)');
    const seen = new Set<string>();
    for (const f of files) {
      // eslint-disable-next-line no-control-regex -- control characters are what this check refuses
      if (/[\x00-\x1f\x7f]/.test(f.name))
        throw httpError('HTTP_MIB_UPLOAD_INVALID', `file name ${JSON.stringify(f.name)} has control characters: give a plain file name`);
      const bytes = Buffer.byteLength(f.name);
      if (bytes > FILE_NAME_BYTES)
        throw httpError('HTTP_MIB_UPLOAD_INVALID', `file name '${f.name}' is ${bytes} bytes in UTF-8; a MIB source name may have at most ${FILE_NAME_BYTES}`);
      if (!FILE_NAME.test(f.name) || f.name.includes('..') || f.name.startsWith('.'))
        throw httpError('HTTP_MIB_UPLOAD_INVALID', `file name '${f.name}' escapes the MIB store or is hidden: give a plain file name`);
      if (!hasExt(f.name)) throw httpError('HTTP_MIB_UPLOAD_TYPE', `${f.name}: a MIB source must end in .mib, .txt or .my (or have no extension)`);
      // The upload's own limit, or the compiler's when that is lower.
      const max = Math.min(MIB_MAX_FILE_BYTES, this.limits.maxSourceBytes);
      if (f.data.length > max)
        throw httpError(
          'HTTP_BODY_TOO_LARGE',
          `${f.name} is ${f.data.length} bytes; a MIB source may have at most ${max}${max < MIB_MAX_FILE_BYTES ? ` (${MIB_LIMIT_SETTINGS.maxSourceBytes})` : ''}`,
        );
      if (!f.data.length) throw httpError('HTTP_MIB_UPLOAD_INVALID', `${f.name} is empty`);
      if (seen.has(f.name)) throw httpError('HTTP_MIB_UPLOAD_INVALID', `${f.name} is given twice in one upload`);
      seen.add(f.name);
    }
  }

  async write(dir: string, name: string, data: Buffer) {
    try {
      await writeFileDurably(join(dir, name), data, 0o644);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      // A name the file system refuses is the request's fault, not the folder's.
      if (err.code === 'ENAMETOOLONG' || err.code === 'EINVAL')
        throw httpError('HTTP_MIB_UPLOAD_INVALID', `cannot store ${name}: the file system refuses the name (${err.code}); give a shorter plain file name`);
      throw httpError(
        'HTTP_MIB_STORE_UNWRITABLE',
        `cannot store ${name} in ${dir} (${err.code ?? err.message}): set SVC_MIB_SOURCE_DIR to a writable directory`,
      );
    }
  }

  /** A name in `group` none of `sources` has and no file of this call took (`claimed`, updated). */
  freeName(sources: SourceFile[], group: string, name: string, claimed: Set<string>): string {
    const taken = (n: string) => claimed.has(`${group}/${n}`) || sources.some((s) => s.path === `${group}/${n}`);
    let n = name;
    for (let i = 2; taken(n); i++) n = `${basename(name, extname(name))}-${i}${extname(name)}`;
    claimed.add(`${group}/${n}`);
    return n;
  }

  /**
   * One compile mode for the whole set until the compiler takes it per source: partial when any of
   * `paths` (the sources compiled) asked for it. Modes of files that are gone do not count.
   */
  modeFor(paths: Iterable<string>): CompileMode {
    for (const p of paths) if (this.modes[p] === 'partial') return 'partial';
    return 'full';
  }

  /** Forgets the modes of files that are gone (removed outside the API, say). */
  async pruneModes(sources: SourceFile[]) {
    const have = new Set(sources.map((s) => s.path));
    const gone = Object.keys(this.modes).filter((p) => !have.has(p));
    for (const p of gone) delete this.modes[p];
    if (gone.length) await this.saveModes();
  }

  async setModes(paths: string[], mode: CompileMode) {
    for (const p of paths) {
      if (mode === 'partial') this.modes[p] = mode;
      else delete this.modes[p];
    }
    await this.saveModes();
  }

  async saveModes() {
    if (!Object.keys(this.modes).length && !existsSync(join(this.sourceDir, MODES))) return;
    await writeFileDurably(join(this.sourceDir, MODES), JSON.stringify(this.modes, null, 1), 0o644).catch(() => undefined);
  }

  /** Every source: bundled top-level files (in directory order), then upload groups by name. */
  async list(): Promise<SourceFile[]> {
    const out: SourceFile[] = [];
    const files = async (dir: string, group: string, bundled: boolean) => {
      let names: string[];
      try {
        names = (await fs.readdir(dir)).sort();
      } catch {
        return;
      }
      for (const file of names) {
        if (!isSourceName(file)) continue;
        const abs = join(dir, file);
        const st = await fs.stat(abs).catch(() => undefined);
        if (st?.isFile()) out.push({ path: `${group}/${file}`, group, file, abs, bundled, size: st.size, mtimeMs: st.mtimeMs });
      }
    };
    for (const b of this.bundled) await files(b.dir, b.group, true);
    let groups: string[] = [];
    try {
      groups = (await fs.readdir(this.sourceDir, { withFileTypes: true }))
        .filter((d) => d.isDirectory() && GROUP_NAME.test(d.name) && !d.name.startsWith('bundled'))
        .map((d) => d.name)
        .sort();
    } catch {
      /* no uploads yet */
    }
    for (const g of groups) await files(join(this.sourceDir, g), g, false);
    return out;
  }

  /**
   * The texts of `sources`; a file over the source limit is not read (its first bytes name the
   * module), and one that cannot be read fails alone: `unread` holds both as failures.
   */
  async readAll(sources: SourceFile[]): Promise<{ texts: MibSource[]; unread: ModuleFailure[] }> {
    const unread: ModuleFailure[] = [];
    const read = await Promise.all(
      sources.map(async (s): Promise<MibSource | undefined> => {
        const max = this.limits.maxSourceBytes;
        try {
          if (s.size <= max) return { file: s.path, text: await fs.readFile(s.abs, 'utf8'), group: s.group };
          const fh = await fs.open(s.abs, 'r');
          const head = Buffer.alloc(4096);
          const { bytesRead } = await fh.read(head, 0, head.length, 0).finally(() => fh.close());
          unread.push(sourceLimitFailure({ file: s.path, group: s.group }, s.size, head.subarray(0, bytesRead).toString('utf8'), max));
        } catch (e) {
          const err = e as NodeJS.ErrnoException;
          const message = `cannot read ${s.path} (${err.code ?? err.message}): check that the file is readable, or remove it`;
          unread.push({
            module: null,
            file: s.path,
            group: s.group,
            missing: [],
            failedImports: [],
            errors: [{ severity: 'error', file: s.path, line: 0, column: 0, message }],
          });
        }
        return undefined;
      }),
    );
    return { texts: read.filter((t) => t !== undefined), unread };
  }
}
