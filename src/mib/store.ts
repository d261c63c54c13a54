// The MIB store on disk: raw sources in source groups (SVC_MIB_SOURCE_DIR/<group>/<file>), read-only
// bundled sources (SVC_MIB_BUNDLED_SOURCE_DIR, several dirs, plus the product's own mibs/), and the
// compiled modules persisted as JSON in SVC_MIB_DIR. One store serves the console's /api/mibs/*,
// the daemon's /api/mibs and the engine's resolve_oids. Rules: docs/mibs.md.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, type Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import { basename, delimiter, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Settings } from '../settings.js';
import { readJsonFile, writeFileDurably } from '../util/durable.js';
import { compileMibs, sourceLimitFailure, type MibSource } from './compiler.js';
import { compiledFromJson, compiledToJson } from './index.js';
import { MibIndex } from './mib-index.js';
import { parseMib } from './parser.js';
import { MIB_FORMAT, MIB_LIMITS, MIB_LIMIT_SETTINGS, type CompileResult, type CompiledModule, type MibDiagnostic, type MibLimits, type ModuleFailure, type ShadowedModule } from './types.js';

export interface MibStoreOptions {
  /** SVC_MIB_DIR: compiled modules, one `<MODULE>.json` each. */
  compiledDir: string;
  /** SVC_MIB_SOURCE_DIR: uploaded sources, `<group>/<file>`. */
  sourceDir: string;
  /** Read-only bundled source directories, most specific first. */
  bundledDirs: string[];
  /** Compile limits (SVC_MIB_MAX_*); default MIB_LIMITS. */
  limits?: Partial<MibLimits>;
  log?: { info(o: object, m: string): void; warn(o: object, m: string): void };
  /** Sources that stopped the process while being compiled are set aside (svc serve, svc console). */
  watch?: MibSourceWatch;
}

/**
 * The poison-input watch for MIB sources (issue 28; src/engine/decode-watch.ts implements it): a
 * source in work when the process died is not compiled again at the next start but listed as
 * failed with the reason, so a MIB that stops the compiler cannot stop every start.
 */
export interface MibSourceWatch {
  /** Why this source is set aside (a process died while compiling it), or undefined. */
  setAside(file: string, text: string): string | undefined;
  /** The source in work now (undefined: none, or work across modules). */
  inWork(file: string | undefined, text?: string): void;
  /** Forgets the notes of sources that are gone or changed. */
  keepOnly(sources: { file: string; text: string }[]): void;
}

/** A 4xx the routes pass on as `{detail}` with `status`. */
export class MibStoreError extends Error {
  override name = 'MibStoreError';
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

export interface UploadFile {
  /** The file name as uploaded (no directories). */
  name: string;
  data: Buffer;
}

export type CompileMode = 'full' | 'partial';

/** One row of `source_inventory`: a module of a source file (a file without a module has module null). */
export interface SourceRow {
  /** Store-relative `<group>/<file>`; the id used by download and delete. */
  path: string;
  group: string;
  file: string;
  /** Read-only bundled source (cannot be deleted). */
  bundled: boolean;
  size_bytes: number;
  modified: string;
  module: string | null;
  status: 'active' | 'shadowed' | 'failed';
  last_updated?: string;
  shadowed_by?: { path: string; group: string };
  errors?: MibDiagnostic[];
  missing?: string[];
  failed_imports?: string[];
}

export interface GroupTotals {
  group: string;
  bundled: boolean;
  files: number;
  modules: number;
  active: number;
  shadowed: number;
  failed: number;
  size_bytes: number;
}

/** A compile failure as the API shows it: the ModuleFailure plus the store path of its file. */
export type FailureView = ModuleFailure & { path: string };

export interface MibStatus {
  /** Deduplicated active modules, sorted. */
  mibs: string[];
  active_modules: string[];
  errors: FailureView[];
  failed_modules: FailureView[];
  source_inventory: SourceRow[];
  source_groups: GroupTotals[];
  compiled_at: string;
  mib_dir: string;
  source_dir: string;
  bundled_dirs: string[];
}

/** The short form pushed as the WebSocket `mibs` message. */
export interface MibSummary {
  active: number;
  failed: number;
  shadowed: number;
  groups: number;
  compiled_at: string;
}

export interface ChangeResult {
  /** Modules compiled and active after the change, sorted. */
  compiled: string[];
  failed: FailureView[];
  shadowed: ShadowedModule[];
  /** Per module of the files concerned: `compiled`, `failed: <first error>`, `shadowed by <path>`. */
  results: Record<string, string>;
  /** Store paths written (upload, fetch) or removed (delete). */
  files: string[];
}

export interface ValidateReport {
  group: string;
  files: { name: string; path: string; size_bytes: number; modules: string[]; errors: MibDiagnostic[]; replaces: boolean }[];
  would_compile: string[];
  would_fail: FailureView[];
  /** Imported modules found nowhere (not uploaded, not stored, not bundled). */
  missing: string[];
  /** Upload modules that would win over a stored or bundled source of the same name. */
  would_shadow: { module: string; path: string; group: string }[];
  /** Upload modules that would lose to another source. */
  would_be_shadowed: { module: string; by: { path: string; group: string } }[];
}

/** What one change did, as the console's stats.mibs counts it: files uploaded, modules compiled and failed in its answer. */
export interface ChangeCounts {
  uploads: number;
  compiled: number;
  failed: number;
}

export interface FetchResult extends ChangeResult {
  fetched: { module: string; from: string; path: string }[];
  /** Still missing after the fetch, with the modules that import them. */
  still_missing: { module: string; needed_by: string[]; reason?: string }[];
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
const MANIFEST = '_manifest.json';
const MODES = '.svc-modes.json';
/** How deep fetch-dependencies looks into bundled directories, and how many files at most. */
const LIBRARY_DEPTH = 6;
const LIBRARY_FILES = 50000;
const REPOSITORY_TIMEOUT_MS = 10000;

interface SourceFile {
  path: string;
  group: string;
  file: string;
  abs: string;
  bundled: boolean;
  size: number;
  mtimeMs: number;
}

interface Compiled {
  sources: SourceFile[];
  modules: CompiledModule[];
  byName: Map<string, { module: CompiledModule; json: string }>;
  failed: FailureView[];
  shadowed: ShadowedModule[];
  compiledAt: string;
  index: MibIndex;
}

interface Manifest {
  format: number;
  fingerprint: string;
  compiled_at: string;
  modules: string[];
  failed: FailureView[];
  shadowed: ShadowedModule[];
}

const hasExt = (name: string) => MIB_SOURCE_EXTENSIONS.includes(extname(name).toLowerCase());
const isSourceName = (name: string) => !name.startsWith('.') && hasExt(name) && FILE_NAME.test(name);

/** Group name check (400 with what is allowed). */
export function checkGroup(group: string): string {
  if (!GROUP_NAME.test(group) || group.startsWith('bundled')) {
    throw new MibStoreError(`source group '${group}' is not allowed: use 1-64 letters, digits, '.', '_' or '-' (not starting with 'bundled', which names the read-only sources)`, 400);
  }
  return group;
}

/** A store path `<group>/<file>` split and checked; anything else (absolute, `..`, deeper) is 400. */
export function splitStorePath(p: string): { group: string; file: string } {
  const parts = p.split('/');
  if (p.includes('\\') || p.includes('\0') || parts.length !== 2 || parts.some((x) => x === '' || x === '.' || x === '..')) {
    throw new MibStoreError(`path '${p}' escapes the MIB store or is not a source path: give '<group>/<file>' as listed in source_inventory`, 400);
  }
  return { group: parts[0]!, file: parts[1]! };
}

/** The modules a text defines, by their headers (cheap; no full parse). */
function definedModules(text: string): string[] {
  // A leading UTF-8 byte order mark would keep the `^` of the first header from matching.
  // (`[^}]` is bounded: unbounded, each line `A {` would scan to the next `}`, quadratic in lines)
  return [...text.replace(/^\uFEFF/, '').matchAll(/^[ \t]*([A-Za-z][A-Za-z0-9-]*)[ \t\r\n]+(?:\{[^}]{0,1024}\}[ \t\r\n]*)?DEFINITIONS\b/gm)].map((m) => m[1]!);
}

/**
 * A repository URL as fetch can take it: Node's fetch refuses `user:password@` in a URL (and its
 * error would echo them), so they go as Basic authorization. `shown` is the URL for messages, with
 * `***` for the credentials; url is '' for a malformed URL.
 */
function repositoryRequest(raw: string): { url: string; headers: Record<string, string>; shown: string } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { url: '', headers: {}, shown: '' };
  }
  if (!u.username && !u.password) return { url: u.href, headers: {}, shown: u.href };
  const dec = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const headers = { authorization: `Basic ${Buffer.from(`${dec(u.username)}:${dec(u.password)}`).toString('base64')}` };
  u.username = '';
  u.password = '';
  return { url: u.href, headers, shown: u.href.replace('//', '//***@') };
}

export class MibStore {
  private state!: Compiled;
  private modes: Record<string, CompileMode> = {};
  private readonly listeners = new Set<() => void>();
  private readonly counters = new Set<(c: ChangeCounts) => void>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Persistence warnings already logged (each once, not once for all). */
  private readonly persistWarned = new Set<string>();
  /** Bundled directories in source order, with their group names. */
  private readonly bundled: { dir: string; group: string }[];
  private readonly limits: MibLimits;

  private constructor(private readonly opts: MibStoreOptions) {
    this.limits = { ...MIB_LIMITS, ...opts.limits };
    const seen = new Set<string>();
    const dirs: { dir: string; group: string }[] = [];
    const add = (dir: string, group: string) => {
      const abs = resolve(dir);
      if (seen.has(abs) || !existsSync(abs)) return;
      seen.add(abs);
      dirs.push({ dir: abs, group });
    };
    opts.bundledDirs.forEach((d, i) => add(d, `bundled-${i + 1}`));
    add(PRODUCT_MIB_DIR, 'bundled');
    this.bundled = dirs;
  }

  /** The store of SVC_MIB_DIR, SVC_MIB_SOURCE_DIR and SVC_MIB_BUNDLED_SOURCE_DIR. */
  static async fromSettings(settings: Settings, log?: MibStoreOptions['log'], watch?: MibSourceWatch): Promise<MibStore> {
    return MibStore.open({
      compiledDir: settings.MIB_DIR,
      sourceDir: settings.MIB_SOURCE_DIR || join(dirname(resolve(settings.MIB_DIR)), 'mib-sources'),
      bundledDirs: settings.MIB_BUNDLED_SOURCE_DIR.split(delimiter).filter(Boolean),
      limits: { maxSourceBytes: settings.MIB_MAX_SOURCE_BYTES, maxSymbols: settings.MIB_MAX_SYMBOLS, maxOidDepth: settings.MIB_MAX_OID_DEPTH, maxCompiledBytes: settings.MIB_MAX_COMPILED_BYTES },
      log,
      watch,
    });
  }

  /** Opens the store: the persisted compile when it matches the sources, else a fresh compile. */
  static async open(opts: MibStoreOptions): Promise<MibStore> {
    const store = new MibStore(opts);
    store.modes = (await readJsonFile<Record<string, CompileMode>>(join(opts.sourceDir, MODES)).catch(() => undefined)) ?? {};
    const sources = await store.listSources();
    await store.pruneModes(sources);
    const loaded = await store.loadPersisted(sources);
    if (loaded) store.state = loaded;
    else await store.compile(sources);
    // Each module that does not compile is named with its reason; the others are loaded and served.
    for (const f of store.state.failed) opts.log?.warn({ module: f.module, path: f.path, reason: f.errors[0]?.message ?? 'no module', ...(f.limit ? { limit: f.limit } : {}) }, 'MIB module does not compile; the other modules are loaded');
    opts.log?.info({ active: store.state.modules.length, failed: store.state.failed.length, shadowed: store.state.shadowed.length, from_cache: !!loaded, bundled: store.bundled.map((b) => b.dir) }, 'MIB store ready');
    return store;
  }

  index(): MibIndex {
    return this.state.index;
  }

  status(): MibStatus {
    const st = this.state;
    const mibs = st.modules.map((m) => m.module);
    const inventory = this.inventory();
    const groups = new Map<string, GroupTotals>();
    const filesSeen = new Set<string>();
    for (const r of inventory) {
      const g = groups.get(r.group) ?? { group: r.group, bundled: r.bundled, files: 0, modules: 0, active: 0, shadowed: 0, failed: 0, size_bytes: 0 };
      groups.set(r.group, g);
      if (!filesSeen.has(r.path)) {
        filesSeen.add(r.path);
        g.files++;
        g.size_bytes += r.size_bytes;
      }
      if (r.module) g.modules++;
      g[r.status]++;
    }
    return {
      mibs,
      active_modules: mibs,
      errors: st.failed,
      failed_modules: st.failed,
      source_inventory: inventory,
      source_groups: [...groups.values()].sort((a, b) => Number(a.bundled) - Number(b.bundled) || a.group.localeCompare(b.group)),
      compiled_at: st.compiledAt,
      mib_dir: resolve(this.opts.compiledDir),
      source_dir: resolve(this.opts.sourceDir),
      bundled_dirs: this.bundled.map((b) => b.dir),
    };
  }

  summary(): MibSummary {
    const st = this.state;
    return { active: st.modules.length, failed: st.failed.length, shadowed: st.shadowed.length, groups: new Set(st.sources.map((s) => s.group)).size, compiled_at: st.compiledAt };
  }

  async validate(files: UploadFile[], opts: { group?: string; mode?: CompileMode } = {}): Promise<ValidateReport> {
    const group = checkGroup(opts.group ?? 'common');
    this.checkUpload(files);
    return this.serial(async () => {
      const { paths, trial } = await this.trialCompile(files, group, opts.mode);
      const known = new Set(this.state.sources.map((s) => s.path));
      const report: ValidateReport = { group, files: [], would_compile: [], would_fail: [], missing: [], would_shadow: [], would_be_shadowed: [] };
      const uploadModules = new Set<string>();
      for (const f of files) {
        const path = `${group}/${f.name}`;
        const parsed = parseMib(f.data.toString('utf8'), path, { maxSymbols: this.limits.maxSymbols });
        const modules = parsed.modules.map((m) => m.name);
        modules.forEach((m) => uploadModules.add(m));
        const errors = [...parsed.errors, ...parsed.modules.flatMap((m) => m.errors)];
        report.files.push({ name: f.name, path, size_bytes: f.data.length, modules, errors, replaces: known.has(path) });
      }
      const isUpload = (file: string) => paths.has(file);
      report.would_compile = trial.modules.filter((m) => isUpload(m.file)).map((m) => m.module);
      report.would_fail = trial.failed.filter((f) => isUpload(f.file)).map((f) => ({ ...f, path: f.file }));
      report.missing = [...new Set(report.would_fail.flatMap((f) => f.missing))].sort();
      for (const sh of trial.shadowed) {
        if (isUpload(sh.by.file) && !isUpload(sh.file)) report.would_shadow.push({ module: sh.module, path: sh.file, group: sh.group ?? '' });
        if (isUpload(sh.file)) report.would_be_shadowed.push({ module: sh.module, by: { path: sh.by.file, group: sh.by.group ?? '' } });
      }
      return report;
    });
  }

  async upload(files: UploadFile[], opts: { group?: string; mode?: CompileMode } = {}): Promise<ChangeResult> {
    const group = checkGroup(opts.group ?? 'common');
    this.checkUpload(files);
    return this.serial(async () => {
      // A module over a limit is refused before anything is written: stored, it would fail every
      // reload and start again. (Other compile errors are stored and listed as failed, as before.)
      const { paths: uploaded, trial } = await this.trialCompile(files, group, opts.mode);
      const over = trial.failed.filter((f) => f.limit && uploaded.has(f.file));
      if (over.length) throw new MibStoreError(`nothing was stored: ${over.map((f) => `${f.file}${f.module ? ` (${f.module})` : ''}: ${f.errors.find((e) => e.limit)?.message ?? f.limit}`).join('; ')}`, 422);
      const dir = join(this.opts.sourceDir, group);
      const paths: string[] = [];
      const created: string[] = [];
      try {
        for (const f of files) {
          const path = `${group}/${f.name}`;
          const isNew = !this.state.sources.some((s) => s.path === path);
          await this.writeSource(dir, f.name, f.data);
          paths.push(path);
          if (isNew) created.push(join(dir, f.name));
        }
      } catch (e) {
        // Files this upload added go again, else they would sit on disk uncompiled and missing from
        // the inventory. A file it replaced keeps its new text (the old is gone): recompile to show it.
        for (const abs of created) await fs.rm(abs, { force: true });
        await fs.rmdir(dir).catch(() => undefined);
        if (paths.length > created.length) await this.compile(await this.listSources());
        throw e;
      }
      await this.setModes(paths, opts.mode ?? 'full');
      await this.compile(await this.listSources());
      return this.counted(this.resultFor(paths), files.length);
    });
  }

  async reload(mode?: CompileMode): Promise<ChangeResult> {
    return this.serial(async () => {
      const sources = await this.listSources();
      if (mode) {
        // The mode is for every file now: modes recorded before (also of files since gone) go.
        this.modes = {};
        await this.setModes(sources.filter((s) => !s.bundled).map((s) => s.path), mode);
      }
      await this.compile(sources);
      return this.counted(this.resultFor(sources.map((s) => s.path)));
    });
  }

  async fetchDependencies(opts: { repositoryUrl?: string } = {}): Promise<FetchResult> {
    return this.serial(() => this.recompileOnError(async () => {
      const fetched: FetchResult['fetched'] = [];
      const notFound = new Map<string, string>();
      const library = await this.library();
      const claimed = new Set<string>();
      const written = new Map<string, string>();
      // Fetched modules may import more missing ones: go on while a round fetches something.
      for (let round = 0; round < 10; round++) {
        const needed = this.missing();
        const todo = [...needed.keys()].filter((m) => !notFound.has(m));
        if (!todo.length) break;
        let got = 0;
        for (const module of todo) {
          const found = await this.findSource(module, library, opts.repositoryUrl).catch((e: Error) => ({ error: e.message }));
          if ('error' in found) {
            notFound.set(module, found.error);
            continue;
          }
          // A library file defining several missing modules is stored once.
          const again = written.get(found.from);
          if (again) {
            fetched.push({ module, from: found.from, path: again });
            continue;
          }
          const firstNeeding = this.state.failed.find((f) => f.missing.includes(module));
          const group = firstNeeding?.group && !firstNeeding.group.startsWith('bundled') ? firstNeeding.group : 'common';
          const name = this.freeName(group, found.name, claimed);
          await this.writeSource(join(this.opts.sourceDir, group), name, found.data);
          written.set(found.from, `${group}/${name}`);
          fetched.push({ module, from: found.from, path: `${group}/${name}` });
          got++;
        }
        if (!got) break;
        await this.compile(await this.listSources());
      }
      const still = this.missing();
      const result = this.counted(this.resultFor([...new Set(fetched.map((f) => f.path))]));
      return {
        ...result,
        fetched,
        still_missing: [...still].map(([module, needed_by]) => ({ module, needed_by, ...(notFound.get(module) ? { reason: notFound.get(module) } : {}) })),
      };
    }));
  }

  /**
   * The daemon's POST /api/mibs/download: named modules from the bundled library or the repository,
   * stored in `group` and compiled. 404 when none is found anywhere, 502 when the repository fails.
   */
  async fetchModules(names: string[], opts: { repositoryUrl?: string; group?: string } = {}): Promise<ChangeResult & { not_found: string[] }> {
    const group = checkGroup(opts.group ?? 'common');
    return this.serial(() => this.recompileOnError(async () => {
      const library = await this.library();
      const paths: string[] = [];
      const notFound: string[] = [];
      const failures: string[] = [];
      const claimed = new Set<string>();
      const written = new Set<string>();
      const inventory = this.inventory();
      for (const module of new Set(names)) {
        const found = await this.findSource(module, library, opts.repositoryUrl).catch((e: Error) => ({ error: e.message }));
        if ('error' in found) {
          (found.error.includes('not found') ? notFound : failures).push(found.error);
          continue;
        }
        // A library file defining several of the names is stored once.
        if (written.has(found.from)) continue;
        written.add(found.from);
        // A module already uploaded to this group is replaced, not stored a second time; but only in
        // a file defining nothing else, or the file's other modules would be lost.
        const alone = (path: string) => inventory.every((r) => r.path !== path || r.module === module);
        const stored = inventory.find((r) => r.module === module && r.group === group && !claimed.has(r.path) && alone(r.path));
        const name = stored?.file ?? this.freeName(group, found.name, claimed);
        claimed.add(`${group}/${name}`);
        await this.writeSource(join(this.opts.sourceDir, group), name, found.data);
        paths.push(`${group}/${name}`);
      }
      if (!paths.length && failures.length) throw new MibStoreError(failures.join('; '), 502);
      if (!paths.length) throw new MibStoreError(notFound.join('; '), 404);
      await this.compile(await this.listSources());
      return { ...this.counted(this.resultFor(paths)), not_found: names.filter((n) => !this.state.byName.has(n) && notFound.some((m) => m.startsWith(`${n}:`))) };
    }));
  }

  readSources(paths: string[]): { path: string; name: string; data: Buffer }[] {
    return paths.map((p) => {
      const src = this.source(p);
      try {
        return { path: p, name: src.file, data: readFileSync(src.abs) };
      } catch (e) {
        throw new MibStoreError(`cannot read ${p}: ${(e as Error).message}`, 404);
      }
    });
  }

  async deleteFiles(given: string[]): Promise<ChangeResult & { not_found: string[] }> {
    const paths = [...new Set(given)];
    for (const p of paths) splitStorePath(p);
    return this.serial(async () => {
      const notFound: string[] = [];
      const removed: string[] = [];
      // A bundled path refuses the whole batch before anything is removed.
      const ro = this.state.sources.find((s) => s.bundled && paths.includes(s.path));
      if (ro) throw new MibStoreError(`${ro.path} is a read-only bundled source (from ${dirname(ro.abs)}); upload a module of the same name to shadow it instead`, 403);
      for (const p of paths) {
        const src = this.state.sources.find((s) => s.path === p);
        if (!src) {
          notFound.push(p);
          continue;
        }
        await fs.rm(src.abs, { force: true });
        removed.push(p);
        // An emptied group folder goes too, so the group leaves the inventory.
        await fs.rmdir(dirname(src.abs)).catch(() => undefined);
      }
      if (removed.length) {
        for (const p of removed) delete this.modes[p];
        await this.saveModes();
        await this.compile(await this.listSources());
      }
      return { ...this.counted({ compiled: [], failed: [], shadowed: [], results: {}, files: removed }), not_found: notFound };
    });
  }

  compiled(name: string): { module: CompiledModule; json: string } | undefined {
    return this.state.byName.get(name);
  }

  compiledList(): { name: string; file: string; size_bytes: number }[] {
    return this.state.modules.map((m) => ({ name: m.module, file: `${m.module}.json`, size_bytes: Buffer.byteLength(this.state.byName.get(m.module)!.json) }));
  }

  modulesOfGroups(groups: string[]): CompiledModule[] {
    const want = new Set(groups);
    return this.state.modules.filter((m) => m.group !== undefined && want.has(m.group));
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Called after every change (console or daemon) with what it counts in the console's stats.mibs. */
  onCounts(fn: (c: ChangeCounts) => void): () => void {
    this.counters.add(fn);
    return () => this.counters.delete(fn);
  }

  // --- internals -------------------------------------------------------------------------------

  /** One change at a time: uploads, deletes and reloads each see the previous one's result. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Fetches write several files: when one write fails, the ones before it are on disk. Compile what
   * is there, so the inventory and the active set show them, then report the failure.
   */
  private async recompileOnError<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      await this.compile(await this.listSources()).catch(() => undefined);
      throw e;
    }
  }

  /** Every change's answer goes through here, so that the console counts daemon changes too. */
  private counted<T extends ChangeResult>(r: T, uploads = 0): T {
    for (const fn of this.counters) fn({ uploads, compiled: r.compiled.length, failed: r.failed.length });
    return r;
  }

  private source(p: string): SourceFile {
    splitStorePath(p);
    const src = this.state.sources.find((s) => s.path === p);
    if (!src) throw new MibStoreError(`no MIB source ${p}: see source_inventory in GET /api/mibs/status for the stored paths`, 404);
    return src;
  }

  private checkUpload(files: UploadFile[]) {
    if (!files.length) throw new MibStoreError('no files: send one or more MIB sources as files[] (.mib, .txt, .my or no extension)', 400);
    const seen = new Set<string>();
    for (const f of files) {
      // eslint-disable-next-line no-control-regex -- control characters are what this check refuses
      if (/[\x00-\x1f\x7f]/.test(f.name)) throw new MibStoreError(`file name ${JSON.stringify(f.name)} has control characters: give a plain file name`, 400);
      const bytes = Buffer.byteLength(f.name);
      if (bytes > FILE_NAME_BYTES) throw new MibStoreError(`file name '${f.name}' is ${bytes} bytes in UTF-8; a MIB source name may have at most ${FILE_NAME_BYTES}`, 400);
      if (!FILE_NAME.test(f.name) || f.name.includes('..') || f.name.startsWith('.')) throw new MibStoreError(`file name '${f.name}' escapes the MIB store or is hidden: give a plain file name`, 400);
      if (!hasExt(f.name)) throw new MibStoreError(`${f.name}: a MIB source must end in .mib, .txt or .my (or have no extension)`, 415);
      // The upload's own limit, or the compiler's when that is lower.
      const max = Math.min(MIB_MAX_FILE_BYTES, this.limits.maxSourceBytes);
      if (f.data.length > max) throw new MibStoreError(`${f.name} is ${f.data.length} bytes; a MIB source may have at most ${max}${max < MIB_MAX_FILE_BYTES ? ` (${MIB_LIMIT_SETTINGS.maxSourceBytes})` : ''}`, 413);
      if (!f.data.length) throw new MibStoreError(`${f.name} is empty`, 400);
      if (seen.has(f.name)) throw new MibStoreError(`${f.name} is given twice in one upload`, 400);
      seen.add(f.name);
    }
  }

  private async writeSource(dir: string, name: string, data: Buffer) {
    try {
      await writeFileDurably(join(dir, name), data, 0o644);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      // A name the file system refuses is the request's fault, not the folder's.
      if (err.code === 'ENAMETOOLONG' || err.code === 'EINVAL') throw new MibStoreError(`cannot store ${name}: the file system refuses the name (${err.code}); give a shorter plain file name`, 400);
      throw new MibStoreError(`cannot store ${name} in ${dir} (${err.code ?? err.message}): set SVC_MIB_SOURCE_DIR to a writable directory`, 503);
    }
  }

  /** A name in `group` no stored source has and no file of this call took (`claimed`, updated). */
  private freeName(group: string, name: string, claimed: Set<string>): string {
    const taken = (n: string) => claimed.has(`${group}/${n}`) || this.state.sources.some((s) => s.path === `${group}/${n}`);
    let n = name;
    for (let i = 2; taken(n); i++) n = `${basename(name, extname(name))}-${i}${extname(name)}`;
    claimed.add(`${group}/${n}`);
    return n;
  }

  /**
   * One compile mode for the whole set until the compiler takes it per source: partial when any of
   * `paths` (the sources compiled) asked for it. Modes of files that are gone do not count.
   */
  private modeFor(paths: Iterable<string>): CompileMode {
    for (const p of paths) if (this.modes[p] === 'partial') return 'partial';
    return 'full';
  }

  /** Forgets the modes of files that are gone (removed outside the API, say). */
  private async pruneModes(sources: SourceFile[]) {
    const have = new Set(sources.map((s) => s.path));
    const gone = Object.keys(this.modes).filter((p) => !have.has(p));
    for (const p of gone) delete this.modes[p];
    if (gone.length) await this.saveModes();
  }

  private async setModes(paths: string[], mode: CompileMode) {
    for (const p of paths) {
      if (mode === 'partial') this.modes[p] = mode;
      else delete this.modes[p];
    }
    await this.saveModes();
  }

  private async saveModes() {
    if (!Object.keys(this.modes).length && !existsSync(join(this.opts.sourceDir, MODES))) return;
    await writeFileDurably(join(this.opts.sourceDir, MODES), JSON.stringify(this.modes, null, 1), 0o644).catch(() => undefined);
  }

  /** Every source: bundled top-level files (in directory order), then upload groups by name. */
  private async listSources(): Promise<SourceFile[]> {
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
      groups = (await fs.readdir(this.opts.sourceDir, { withFileTypes: true })).filter((d) => d.isDirectory() && GROUP_NAME.test(d.name) && !d.name.startsWith('bundled')).map((d) => d.name).sort();
    } catch {
      /* no uploads yet */
    }
    for (const g of groups) await files(join(this.opts.sourceDir, g), g, false);
    return out;
  }

  /**
   * The texts of `sources`; a file over the source limit is not read (its first bytes name the
   * module), and one that cannot be read fails alone: `unread` holds both as failures.
   */
  private async readAll(sources: SourceFile[]): Promise<{ texts: MibSource[]; unread: ModuleFailure[] }> {
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
          unread.push({ module: null, file: s.path, group: s.group, missing: [], failedImports: [], errors: [{ severity: 'error', file: s.path, line: 0, column: 0, message }] });
        }
        return undefined;
      }),
    );
    return { texts: read.filter((t) => t !== undefined), unread };
  }

  /**
   * compileMibs with the store's limits. Should the compiler throw (a bug: it never throws on bad
   * input), each source is tried alone, and those it throws on fail while the rest compile.
   */
  private compileSet(texts: MibSource[], unread: ModuleFailure[], mode: CompileMode): CompileResult {
    const watch = this.opts.watch;
    let onSource: ((file: string | undefined) => void) | undefined;
    if (watch) {
      watch.keepOnly(texts);
      const aside: ModuleFailure[] = [];
      texts = texts.filter((t) => {
        const why = watch.setAside(t.file, t.text);
        if (why) aside.push({ module: definedModules(t.text.slice(0, 4096))[0] ?? null, file: t.file, group: t.group, missing: [], failedImports: [], errors: [{ severity: 'error', file: t.file, line: 0, column: 0, message: why }] });
        return !why;
      });
      unread = [...unread, ...aside];
      const byFile = new Map(texts.map((t) => [t.file, t.text]));
      onSource = (file) => watch.inWork(file, file === undefined ? undefined : byFile.get(file));
    }
    const opts = { mode, limits: this.limits, onSource };
    let r: CompileResult;
    try {
      r = compileMibs(texts, opts);
    } catch (e) {
      const crashed = (t: MibSource, err: unknown): ModuleFailure => {
        const message = `the MIB compiler failed on this source (${(err as Error).message}); it was left out and the other sources compiled: remove it, and report the failure`;
        return { module: definedModules(t.text.slice(0, 4096))[0] ?? null, file: t.file, group: t.group, missing: [], failedImports: [], errors: [{ severity: 'error', file: t.file, line: 0, column: 0, message }] };
      };
      this.opts.log?.warn({ err: (e as Error).message }, 'the MIB compiler failed; compiling each source alone to find the one it fails on');
      const bad: ModuleFailure[] = [];
      const good = texts.filter((t) => {
        try {
          compileMibs([t], opts);
          return true;
        } catch (err) {
          bad.push(crashed(t, err));
          return false;
        }
      });
      try {
        r = compileMibs(good, opts);
      } catch (err) {
        r = { modules: [], failed: good.map((t) => crashed(t, err)), shadowed: [], json: new Map() };
      }
      r.failed.push(...bad);
    }
    r.failed.push(...unread);
    return r;
  }

  /** The stored sources with `files` uploaded to `group` (replacing the same paths), compiled in memory. */
  private async trialCompile(files: UploadFile[], group: string, mode?: CompileMode): Promise<{ paths: Set<string>; trial: CompileResult }> {
    const paths = new Set(files.map((f) => `${group}/${f.name}`));
    const kept = this.state.sources.filter((s) => !paths.has(s.path));
    const { texts, unread } = await this.readAll(kept);
    for (const f of files) texts.push({ file: `${group}/${f.name}`, text: f.data.toString('utf8'), group });
    // In listSources' order (bundled first, then groups and files by name), so that a tie goes the
    // way the upload's compile will decide it.
    const user = (t: MibSource) => (t.group!.startsWith('bundled') ? 0 : 1);
    const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    texts.sort((a, b) => user(a) - user(b) || (user(a) ? cmp(a.group!, b.group!) || cmp(a.file, b.file) : 0));
    const trial = this.compileSet(texts, unread, mode === 'partial' ? 'partial' : this.modeFor(kept.map((s) => s.path)));
    return { paths, trial };
  }

  private fingerprint(sources: SourceFile[]): string {
    const h = createHash('sha256').update(`${MIB_FORMAT}\n${JSON.stringify(this.modes)}\n`);
    for (const s of sources) h.update(`${s.path}\0${s.abs}\0${s.size}\0${s.mtimeMs}\n`);
    return h.digest('hex');
  }

  /** Compiles `sources`, installs the result and persists it to SVC_MIB_DIR. */
  private async compile(sources: SourceFile[]) {
    await this.pruneModes(sources);
    const { texts, unread } = await this.readAll(sources);
    const r = this.compileSet(texts, unread, this.modeFor(sources.map((s) => s.path)));
    const byName = new Map(r.modules.map((m) => [m.module, { module: m, json: r.json.get(m.module) ?? compiledToJson(m) }]));
    this.state = {
      sources,
      modules: r.modules,
      byName,
      failed: r.failed.map((f) => ({ ...f, path: f.file })),
      shadowed: r.shadowed,
      compiledAt: new Date().toISOString(),
      index: new MibIndex(r.modules),
    };
    await this.persist(sources);
    for (const fn of this.listeners) fn();
  }

  private async persist(sources: SourceFile[]) {
    const dir = this.opts.compiledDir;
    const st = this.state;
    // Each failure is logged with its own error, once per kind (not once for good): a module that
    // cannot be written does not hide a later, different problem.
    const warn = (e: unknown, what: string, module?: string) => {
      const err = e as NodeJS.ErrnoException;
      const key = `${module ?? ''}\0${err.code ?? err.message}`;
      if (this.persistWarned.has(key)) return;
      this.persistWarned.add(key);
      this.opts.log?.warn({ dir, ...(module ? { module } : {}), err: err.message }, `${what} (${err.code ?? err.message}): compiled MIB modules are kept in memory, and the next start compiles again`);
    };
    try {
      await fs.mkdir(dir, { recursive: true });
      const keep = new Set<string>([MANIFEST]);
      let complete = true;
      for (const [name, { json }] of st.byName) {
        keep.add(`${name}.json`);
        await fs.writeFile(join(dir, `${name}.json`), json).catch((e: unknown) => {
          warn(e, `cannot write ${name}.json in SVC_MIB_DIR`, name);
          complete = false;
        });
      }
      for (const f of await fs.readdir(dir)) if (f.endsWith('.json') && !keep.has(f)) await fs.rm(join(dir, f), { force: true });
      // The manifest goes last: a crash before it leaves a mismatch, and the next start recompiles.
      // When a module could not be written there is no manifest at all: an older copy of that module
      // must not be loaded as this compile's.
      if (!complete) return void (await fs.rm(join(dir, MANIFEST), { force: true }));
      const manifest: Manifest = { format: MIB_FORMAT, fingerprint: this.fingerprint(sources), compiled_at: st.compiledAt, modules: [...st.byName.keys()], failed: st.failed, shadowed: st.shadowed };
      await writeFileDurably(join(dir, MANIFEST), JSON.stringify(manifest), 0o644);
    } catch (e) {
      warn(e, 'cannot persist the compiled MIB modules in SVC_MIB_DIR');
    }
  }

  private async loadPersisted(sources: SourceFile[]): Promise<Compiled | undefined> {
    const dir = this.opts.compiledDir;
    const manifest = await readJsonFile<Manifest>(join(dir, MANIFEST)).catch(() => undefined);
    if (!manifest || manifest.format !== MIB_FORMAT || manifest.fingerprint !== this.fingerprint(sources)) return undefined;
    try {
      const byName = new Map<string, { module: CompiledModule; json: string }>();
      for (const name of manifest.modules) {
        const json = await fs.readFile(join(dir, `${name}.json`), 'utf8');
        byName.set(name, { module: compiledFromJson(json, `${name}.json`), json });
      }
      const modules = [...byName.values()].map((x) => x.module);
      return { sources, modules, byName, failed: manifest.failed, shadowed: manifest.shadowed, compiledAt: manifest.compiled_at, index: new MibIndex(modules) };
    } catch {
      return undefined;
    }
  }

  private inventory(): SourceRow[] {
    const st = this.state;
    const bySource = new Map(st.sources.map((s) => [s.path, s]));
    const row = (path: string, module: string | null, status: SourceRow['status']): SourceRow => {
      const s = bySource.get(path);
      return {
        path,
        group: s?.group ?? path.split('/')[0]!,
        file: s?.file ?? path.split('/')[1]!,
        bundled: s?.bundled ?? false,
        size_bytes: s?.size ?? 0,
        modified: new Date(s?.mtimeMs ?? 0).toISOString(),
        module,
        status,
      };
    };
    const rows: SourceRow[] = [];
    for (const m of st.modules) {
      const r = row(m.file, m.module, 'active');
      if (m.identity?.lastUpdated) r.last_updated = m.identity.lastUpdated;
      rows.push(r);
    }
    for (const f of st.failed) rows.push({ ...row(f.path, f.module, 'failed'), errors: f.errors, missing: f.missing, failed_imports: f.failedImports });
    for (const sh of st.shadowed) {
      const r = row(sh.file, sh.module, 'shadowed');
      if (sh.lastUpdated) r.last_updated = sh.lastUpdated;
      r.shadowed_by = { path: sh.by.file, group: sh.by.group ?? '' };
      rows.push(r);
    }
    const order = new Map(st.sources.map((s, i) => [s.path, i]));
    return rows.sort((a, b) => (order.get(a.path) ?? 0) - (order.get(b.path) ?? 0) || (a.module ?? '').localeCompare(b.module ?? ''));
  }

  /** Per module of the files at `paths`: compiled / failed: ... / shadowed by ... */
  private resultFor(paths: string[]): ChangeResult {
    const want = new Set(paths);
    const st = this.state;
    const results: Record<string, string> = {};
    const compiled = st.modules.filter((m) => want.has(m.file)).map((m) => m.module);
    for (const m of compiled) results[m] = 'compiled';
    const failed = st.failed.filter((f) => want.has(f.path));
    for (const f of failed) {
      const e = f.errors[0];
      results[f.module ?? f.path] = `failed: ${e ? `${e.file}:${e.line}:${e.column} ${e.message}` : 'no module'}`;
    }
    const shadowed = st.shadowed.filter((s) => want.has(s.file));
    // A module both compiled (or failed) and shadowed among these files keeps the outcome of its winner.
    for (const s of shadowed) results[s.module] ??= `shadowed by ${s.by.file}`;
    return { compiled, failed, shadowed, results, files: paths };
  }

  /** Missing imports of the failed modules -> the modules needing them. */
  private missing(): Map<string, string[]> {
    const m = new Map<string, string[]>();
    for (const f of this.state.failed) for (const x of f.missing) m.set(x, [...(m.get(x) ?? []), f.module ?? f.path]);
    return m;
  }

  /** Module name -> file, for every MIB-like file anywhere below the bundled directories. */
  private async library(): Promise<Map<string, string>> {
    const lib = new Map<string, string>();
    let count = 0;
    const walkDir = async (dir: string, depth: number) => {
      let entries: Dirent[];
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (count >= LIBRARY_FILES || e.name.startsWith('.')) continue;
        const abs = join(dir, e.name);
        if (e.isDirectory() && depth < LIBRARY_DEPTH) await walkDir(abs, depth + 1);
        else if ((e.isFile() || e.isSymbolicLink()) && hasExt(e.name)) {
          count++;
          const text = await fs.readFile(abs, 'utf8').catch(() => '');
          for (const m of definedModules(text)) if (!lib.has(m)) lib.set(m, abs);
        }
      }
    };
    for (const b of this.bundled) await walkDir(b.dir, 0);
    return lib;
  }

  /** A module's source from the bundled library, else the repository; throws with the reason. */
  private async findSource(module: string, library: Map<string, string>, repositoryUrl?: string): Promise<{ name: string; data: Buffer; from: string }> {
    const local = library.get(module);
    if (local) return { name: basename(local), data: await fs.readFile(local), from: local };
    if (!repositoryUrl) throw new Error(`${module}: not found in the bundled sources (${this.bundled.map((b) => b.dir).join(', ')}) and no MIB repository URL is configured`);
    const raw = repositoryUrl.includes('@mib@') ? repositoryUrl.replaceAll('@mib@', encodeURIComponent(module)) : `${repositoryUrl.replace(/\/+$/, '')}/${encodeURIComponent(module)}`;
    const { url, headers, shown } = repositoryRequest(raw);
    if (!url) throw new Error(`${module}: the MIB repository URL is not a valid URL; check mib_repository_url`);
    // Error texts (of fetch too) may quote the URL: only the form without the password goes out.
    const hide = (text: string) => text.replaceAll(raw, shown).replaceAll(url, shown);
    let res: Response;
    try {
      res = await fetch(url, { headers, signal: AbortSignal.timeout(REPOSITORY_TIMEOUT_MS) });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
      throw new Error(`${module}: the MIB repository ${shown} cannot be reached (${hide(cause)}); check mib_repository_url and the network`, { cause: e });
    }
    if (res.status === 404) throw new Error(`${module}: not found in the bundled sources or at ${shown}`);
    if (!res.ok) throw new Error(`${module}: the MIB repository answered ${res.status} for ${shown}`);
    const data = Buffer.from(await res.arrayBuffer());
    if (data.length > MIB_MAX_FILE_BYTES) throw new Error(`${module}: ${shown} sent more than ${MIB_MAX_FILE_BYTES} bytes`);
    if (!definedModules(data.toString('utf8')).includes(module)) throw new Error(`${module}: ${shown} did not return a MIB module named ${module}`);
    return { name: `${module}.mib`, data, from: shown };
  }
}
