// What the MIB routes answer (the console's /api/mibs/*, the daemon's /api/mibs and the WebSocket
// `mibs` message): the shapes, and how each is read from one compile of the store.
import type { Compiled } from './compile-cache.js';
import type { CompileResult, FailureView, MibDiagnostic, ShadowedModule } from './types.js';

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

export type { FailureView };

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

/** Every module of every source, in source order: active, failed or shadowed. */
export function inventory(st: Compiled): SourceRow[] {
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

/** GET /api/mibs/status: the inventory with totals per source group, and where the store is. */
export function statusOf(st: Compiled, where: { mib_dir: string; source_dir: string; bundled_dirs: string[] }): MibStatus {
  const mibs = st.modules.map((m) => m.module);
  const rows = inventory(st);
  const groups = new Map<string, GroupTotals>();
  const filesSeen = new Set<string>();
  for (const r of rows) {
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
    source_inventory: rows,
    source_groups: [...groups.values()].sort((a, b) => Number(a.bundled) - Number(b.bundled) || a.group.localeCompare(b.group)),
    compiled_at: st.compiledAt,
    ...where,
  };
}

export function summaryOf(st: Compiled): MibSummary {
  return {
    active: st.modules.length,
    failed: st.failed.length,
    shadowed: st.shadowed.length,
    groups: new Set(st.sources.map((s) => s.group)).size,
    compiled_at: st.compiledAt,
  };
}

/** Per module of the files at `paths`: compiled / failed: ... / shadowed by ... */
export function resultFor(st: Compiled, paths: string[]): ChangeResult {
  const want = new Set(paths);
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

/** The upload's part of a trial compile (`paths`: the upload's store paths) in the validate report. */
export function fillValidateReport(report: ValidateReport, trial: CompileResult, paths: Set<string>): ValidateReport {
  const isUpload = (file: string) => paths.has(file);
  report.would_compile = trial.modules.filter((m) => isUpload(m.file)).map((m) => m.module);
  report.would_fail = trial.failed.filter((f) => isUpload(f.file)).map((f) => ({ ...f, path: f.file }));
  report.missing = [...new Set(report.would_fail.flatMap((f) => f.missing))].sort();
  for (const sh of trial.shadowed) {
    if (isUpload(sh.by.file) && !isUpload(sh.file)) report.would_shadow.push({ module: sh.module, path: sh.file, group: sh.group ?? '' });
    if (isUpload(sh.file)) report.would_be_shadowed.push({ module: sh.module, by: { path: sh.by.file, group: sh.by.group ?? '' } });
  }
  return report;
}
