// The MIB store: one store serves the console's /api/mibs/*, the daemon's /api/mibs and the engine's
// resolve_oids. It compiles the sources (sources.ts: uploaded source groups in SVC_MIB_SOURCE_DIR
// and the read-only bundled ones), keeps the compile in SVC_MIB_DIR (compile-cache.ts), fetches
// missing modules (fetcher.ts), and answers in the shapes of views.ts; one change at a time.
// Rules: docs/mibs.md.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { httpError } from '../core/http-errors.js';
import type { Settings } from '../settings.js';
import { CompileCache, fingerprint, type Compiled } from './compile-cache.js';
import { mibDirs } from './dirs.js';
import { compileMibs, type MibSource } from './compiler.js';
import { MibFetcher } from './fetcher.js';
import { compiledToJson } from './index.js';
import { MibIndex } from './mib-index.js';
import { parseMib } from './parser.js';
import {
  bundledDirs,
  checkGroup,
  definedModules,
  MibSources,
  splitStorePath,
  type BundledDir,
  type CompileMode,
  type SourceFile,
  type UploadFile,
} from './sources.js';
import { MIB_LIMITS, type CompileResult, type CompiledModule, type MibLimits, type ModuleFailure } from './types.js';
import {
  fillValidateReport,
  inventory,
  resultFor,
  statusOf,
  summaryOf,
  type ChangeCounts,
  type ChangeResult,
  type FetchResult,
  type MibStatus,
  type MibSummary,
  type ValidateReport,
} from './views.js';

export { checkGroup, MIB_MAX_FILE_BYTES, MIB_SOURCE_EXTENSIONS, PRODUCT_MIB_DIR, splitStorePath, type CompileMode, type UploadFile } from './sources.js';
export type { ChangeCounts, ChangeResult, FailureView, FetchResult, GroupTotals, MibStatus, MibSummary, SourceRow, ValidateReport } from './views.js';

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

export class MibStore {
  private state!: Compiled;
  private readonly listeners = new Set<() => void>();
  private readonly counters = new Set<(c: ChangeCounts) => void>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Bundled directories in source order, with their group names. */
  private readonly bundled: BundledDir[];
  private readonly limits: MibLimits;
  private readonly files: MibSources;
  private readonly cache: CompileCache;
  private readonly fetcher: MibFetcher;

  private constructor(private readonly opts: MibStoreOptions) {
    this.limits = { ...MIB_LIMITS, ...opts.limits };
    this.bundled = bundledDirs(opts.bundledDirs);
    this.files = new MibSources(opts.sourceDir, this.bundled, this.limits);
    this.cache = new CompileCache(opts.compiledDir, opts.log);
    this.fetcher = new MibFetcher(this.bundled);
  }

  /** The store of SVC_MIB_DIR, SVC_MIB_SOURCE_DIR and SVC_MIB_BUNDLED_SOURCE_DIR. */
  static async fromSettings(settings: Settings, log?: MibStoreOptions['log'], watch?: MibSourceWatch): Promise<MibStore> {
    // Unset and not writable at the filesystem root: folders under ~/.svc (dirs.ts), said once here.
    const { compiledDir, sourceDir, fallbacks } = mibDirs(settings);
    for (const f of fallbacks) log?.info({ variable: f.variable, default: f.default, dir: f.dir }, f.message);
    return MibStore.open({
      compiledDir,
      sourceDir,
      bundledDirs: settings.MIB_BUNDLED_SOURCE_DIR.split(delimiter).filter(Boolean),
      limits: {
        maxSourceBytes: settings.MIB_MAX_SOURCE_BYTES,
        maxSymbols: settings.MIB_MAX_SYMBOLS,
        maxOidDepth: settings.MIB_MAX_OID_DEPTH,
        maxCompiledBytes: settings.MIB_MAX_COMPILED_BYTES,
      },
      log,
      watch,
    });
  }

  /** Opens the store: the persisted compile when it matches the sources, else a fresh compile. */
  static async open(opts: MibStoreOptions): Promise<MibStore> {
    const store = new MibStore(opts);
    await store.files.loadModes();
    const sources = await store.files.list();
    await store.files.pruneModes(sources);
    const loaded = await store.cache.load(sources, fingerprint(sources, store.files.modes));
    if (loaded) store.state = loaded;
    else await store.compile(sources);
    // Each module that does not compile is named with its reason; the others are loaded and served.
    for (const f of store.state.failed)
      opts.log?.warn(
        { module: f.module, path: f.path, reason: f.errors[0]?.message ?? 'no module', ...(f.limit ? { limit: f.limit } : {}) },
        'MIB module does not compile; the other modules are loaded',
      );
    opts.log?.info(
      {
        active: store.state.modules.length,
        failed: store.state.failed.length,
        shadowed: store.state.shadowed.length,
        from_cache: !!loaded,
        bundled: store.bundled.map((b) => b.dir),
      },
      'MIB store ready',
    );
    return store;
  }

  index(): MibIndex {
    return this.state.index;
  }

  status(): MibStatus {
    return statusOf(this.state, {
      mib_dir: resolve(this.opts.compiledDir),
      source_dir: resolve(this.opts.sourceDir),
      bundled_dirs: this.bundled.map((b) => b.dir),
    });
  }

  summary(): MibSummary {
    return summaryOf(this.state);
  }

  async validate(files: UploadFile[], opts: { group?: string; mode?: CompileMode } = {}): Promise<ValidateReport> {
    const group = checkGroup(opts.group ?? 'common');
    this.files.checkUpload(files);
    return this.serial(async () => {
      const { paths, trial } = await this.trialCompile(files, group, opts.mode);
      const known = new Set(this.state.sources.map((s) => s.path));
      const report: ValidateReport = { group, files: [], would_compile: [], would_fail: [], missing: [], would_shadow: [], would_be_shadowed: [] };
      for (const f of files) {
        const path = `${group}/${f.name}`;
        const parsed = parseMib(f.data.toString('utf8'), path, { maxSymbols: this.limits.maxSymbols });
        const modules = parsed.modules.map((m) => m.name);
        const errors = [...parsed.errors, ...parsed.modules.flatMap((m) => m.errors)];
        report.files.push({ name: f.name, path, size_bytes: f.data.length, modules, errors, replaces: known.has(path) });
      }
      return fillValidateReport(report, trial, paths);
    });
  }

  async upload(files: UploadFile[], opts: { group?: string; mode?: CompileMode } = {}): Promise<ChangeResult> {
    const group = checkGroup(opts.group ?? 'common');
    this.files.checkUpload(files);
    return this.serial(async () => {
      // A module over a limit is refused before anything is written: stored, it would fail every
      // reload and start again. (Other compile errors are stored and listed as failed, as before.)
      const { paths: uploaded, trial } = await this.trialCompile(files, group, opts.mode);
      const over = trial.failed.filter((f) => f.limit && uploaded.has(f.file));
      if (over.length)
        throw httpError(
          'HTTP_MIB_OVER_LIMIT',
          `nothing was stored: ${over.map((f) => `${f.file}${f.module ? ` (${f.module})` : ''}: ${f.errors.find((e) => e.limit)?.message ?? f.limit}`).join('; ')}`,
        );
      const dir = join(this.opts.sourceDir, group);
      const paths: string[] = [];
      const created: string[] = [];
      try {
        for (const f of files) {
          const path = `${group}/${f.name}`;
          const isNew = !this.state.sources.some((s) => s.path === path);
          await this.files.write(dir, f.name, f.data);
          paths.push(path);
          if (isNew) created.push(join(dir, f.name));
        }
      } catch (e) {
        // Files this upload added go again, else they would sit on disk uncompiled and missing from
        // the inventory. A file it replaced keeps its new text (the old is gone): recompile to show it.
        for (const abs of created) await fs.rm(abs, { force: true });
        await fs.rmdir(dir).catch(() => undefined);
        if (paths.length > created.length) await this.compile(await this.files.list());
        throw e;
      }
      await this.files.setModes(paths, opts.mode ?? 'full');
      await this.compile(await this.files.list());
      return this.counted(resultFor(this.state, paths), files.length);
    });
  }

  async reload(mode?: CompileMode): Promise<ChangeResult> {
    return this.serial(async () => {
      const sources = await this.files.list();
      if (mode) {
        // The mode is for every file now: modes recorded before (also of files since gone) go.
        this.files.modes = {};
        await this.files.setModes(
          sources.filter((s) => !s.bundled).map((s) => s.path),
          mode,
        );
      }
      await this.compile(sources);
      return this.counted(
        resultFor(
          this.state,
          sources.map((s) => s.path),
        ),
      );
    });
  }

  async fetchDependencies(opts: { repositoryUrl?: string } = {}): Promise<FetchResult> {
    return this.serial(() =>
      this.recompileOnError(async () => {
        const fetched: FetchResult['fetched'] = [];
        const notFound = new Map<string, string>();
        const library = await this.fetcher.library();
        const claimed = new Set<string>();
        const written = new Map<string, string>();
        // Fetched modules may import more missing ones: go on while a round fetches something.
        for (let round = 0; round < 10; round++) {
          const needed = this.missing();
          const todo = [...needed.keys()].filter((m) => !notFound.has(m));
          if (!todo.length) break;
          let got = 0;
          for (const module of todo) {
            const found = await this.fetcher.findSource(module, library, opts.repositoryUrl).catch((e: Error) => ({ error: e.message }));
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
            const name = this.files.freeName(this.state.sources, group, found.name, claimed);
            await this.files.write(join(this.opts.sourceDir, group), name, found.data);
            written.set(found.from, `${group}/${name}`);
            fetched.push({ module, from: found.from, path: `${group}/${name}` });
            got++;
          }
          if (!got) break;
          await this.compile(await this.files.list());
        }
        const still = this.missing();
        const result = this.counted(resultFor(this.state, [...new Set(fetched.map((f) => f.path))]));
        return {
          ...result,
          fetched,
          still_missing: [...still].map(([module, needed_by]) => ({ module, needed_by, ...(notFound.get(module) ? { reason: notFound.get(module) } : {}) })),
        };
      }),
    );
  }

  /**
   * The daemon's POST /api/mibs/download: named modules from the bundled library or the repository,
   * stored in `group` and compiled. 404 when none is found anywhere, 502 when the repository fails.
   */
  async fetchModules(names: string[], opts: { repositoryUrl?: string; group?: string } = {}): Promise<ChangeResult & { not_found: string[] }> {
    const group = checkGroup(opts.group ?? 'common');
    return this.serial(() =>
      this.recompileOnError(async () => {
        const library = await this.fetcher.library();
        const paths: string[] = [];
        const notFound: string[] = [];
        const failures: string[] = [];
        const claimed = new Set<string>();
        const written = new Set<string>();
        const rows = inventory(this.state);
        for (const module of new Set(names)) {
          const found = await this.fetcher.findSource(module, library, opts.repositoryUrl).catch((e: Error) => ({ error: e.message }));
          if ('error' in found) {
            (found.error.includes('not found') ? notFound : failures).push(found.error);
            continue;
          }
          // A library file defining several of the names is stored once.
          if (written.has(found.from)) continue;
          written.add(found.from);
          // A module already uploaded to this group is replaced, not stored a second time; but only in
          // a file defining nothing else, or the file's other modules would be lost.
          const alone = (path: string) => rows.every((r) => r.path !== path || r.module === module);
          const stored = rows.find((r) => r.module === module && r.group === group && !claimed.has(r.path) && alone(r.path));
          const name = stored?.file ?? this.files.freeName(this.state.sources, group, found.name, claimed);
          claimed.add(`${group}/${name}`);
          await this.files.write(join(this.opts.sourceDir, group), name, found.data);
          paths.push(`${group}/${name}`);
        }
        if (!paths.length && failures.length) throw httpError('HTTP_MIB_REPOSITORY_FAILED', failures.join('; '));
        if (!paths.length) throw httpError('HTTP_MIB_NOT_FOUND', notFound.join('; '));
        await this.compile(await this.files.list());
        return {
          ...this.counted(resultFor(this.state, paths)),
          not_found: names.filter((n) => !this.state.byName.has(n) && notFound.some((m) => m.startsWith(`${n}:`))),
        };
      }),
    );
  }

  readSources(paths: string[]): { path: string; name: string; data: Buffer }[] {
    return paths.map((p) => {
      const src = this.source(p);
      try {
        return { path: p, name: src.file, data: readFileSync(src.abs) };
      } catch (e) {
        throw httpError('HTTP_MIB_NOT_FOUND', `cannot read ${p}: ${(e as Error).message}`);
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
      if (ro)
        throw httpError(
          'HTTP_MIB_SOURCE_READ_ONLY',
          `${ro.path} is a read-only bundled source (from ${dirname(ro.abs)}); upload a module of the same name to shadow it instead`,
        );
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
        for (const p of removed) delete this.files.modes[p];
        await this.files.saveModes();
        await this.compile(await this.files.list());
      }
      return { ...this.counted({ compiled: [], failed: [], shadowed: [], results: {}, files: removed }), not_found: notFound };
    });
  }

  compiled(name: string): { module: CompiledModule; json: string } | undefined {
    return this.state.byName.get(name);
  }

  /** Each compiled module with its size and the SHA-256 of its JSON (a worker's sync fetches only modules whose hash it lacks). */
  compiledList(): { name: string; file: string; size_bytes: number; sha256: string }[] {
    return this.state.modules.map((m) => {
      const json = this.state.byName.get(m.module)!.json;
      return { name: m.module, file: `${m.module}.json`, size_bytes: Buffer.byteLength(json), sha256: this.jsonHash(m.module, json) };
    });
  }

  /** SHA-256 of a module's JSON, computed once per JSON text (a recompile makes a new text). */
  private readonly hashes = new Map<string, { json: string; sha256: string }>();
  private jsonHash(name: string, json: string): string {
    const known = this.hashes.get(name);
    if (known && known.json === json) return known.sha256;
    const sha256 = createHash('sha256').update(json).digest('hex');
    this.hashes.set(name, { json, sha256 });
    if (this.hashes.size > this.state.modules.length * 2) for (const k of [...this.hashes.keys()]) if (!this.state.byName.has(k)) this.hashes.delete(k);
    return sha256;
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
      await this.compile(await this.files.list()).catch(() => undefined);
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
    if (!src) throw httpError('HTTP_MIB_NOT_FOUND', `no MIB source ${p}: see source_inventory in GET /api/mibs/status for the stored paths`);
    return src;
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
        if (why)
          aside.push({
            module: definedModules(t.text.slice(0, 4096))[0] ?? null,
            file: t.file,
            group: t.group,
            missing: [],
            failedImports: [],
            errors: [{ severity: 'error', file: t.file, line: 0, column: 0, message: why }],
          });
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
        return {
          module: definedModules(t.text.slice(0, 4096))[0] ?? null,
          file: t.file,
          group: t.group,
          missing: [],
          failedImports: [],
          errors: [{ severity: 'error', file: t.file, line: 0, column: 0, message }],
        };
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
    const { texts, unread } = await this.files.readAll(kept);
    for (const f of files) texts.push({ file: `${group}/${f.name}`, text: f.data.toString('utf8'), group });
    // In listSources' order (bundled first, then groups and files by name), so that a tie goes the
    // way the upload's compile will decide it.
    const user = (t: MibSource) => (t.group!.startsWith('bundled') ? 0 : 1);
    const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    texts.sort((a, b) => user(a) - user(b) || (user(a) ? cmp(a.group!, b.group!) || cmp(a.file, b.file) : 0));
    const trial = this.compileSet(texts, unread, mode === 'partial' ? 'partial' : this.files.modeFor(kept.map((s) => s.path)));
    return { paths, trial };
  }

  /** Compiles `sources`, installs the result and persists it to SVC_MIB_DIR. */
  private async compile(sources: SourceFile[]) {
    await this.files.pruneModes(sources);
    const { texts, unread } = await this.files.readAll(sources);
    const r = this.compileSet(texts, unread, this.files.modeFor(sources.map((s) => s.path)));
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
    await this.cache.save(this.state, fingerprint(sources, this.files.modes));
    for (const fn of this.listeners) fn();
  }

  /** Missing imports of the failed modules -> the modules needing them. */
  private missing(): Map<string, string[]> {
    const m = new Map<string, string[]>();
    for (const f of this.state.failed) for (const x of f.missing) m.set(x, [...(m.get(x) ?? []), f.module ?? f.path]);
    return m;
  }
}
