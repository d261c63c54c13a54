// The pipeline manager's registry and versions: which pipelines are registered (register, update,
// delete, rollback, the stored ones at start, SVC_PIPELINE_DIR), and each one's desired state (start
// and stop, remembered in the store: a stopped pipeline stays stopped across restarts; the YAML's
// `enabled` is only the state a new pipeline starts in). Writes of one name take turns and commit to
// the store before the registry changes. Arming a schedule and halting a pipeline are the
// scheduler's and the run supervisor's (src/pipelines/scheduler.ts, supervisor.ts).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPipelineText } from '../config/load.js';
import { formatDiagnostic } from '../config/diagnostics.js';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import { errorMessage } from '../core/errors.js';
import { PipelineConflictError } from '../store/index.js';
import { KeyedMutex } from '../store/util.js';
import type { DesiredState, StoredPipeline } from '../store/types.js';
import { forgetPipelineFiles } from './forget-pipeline.js';
import { ManagerError } from './manager-error.js';
import type { Managed, ManagerDeps } from './types.js';

/** What the registry asks of the rest of the manager when a pipeline is installed or taken out. */
export interface RegistryLifecycle {
  /** Arms the schedule of a pipeline just installed (desired running, not manual) or started. */
  arm(p: Managed): void;
  /** Stops the schedule and drains the active run. */
  halt(p: Managed): Promise<void>;
}

export class PipelineRegistry {
  private readonly pipelines = new Map<string, Managed>();
  /**
   * Writes of one name (register, update, remove, rollback) take turns: each commits its database
   * transaction, then changes the registry, before the next starts, so the registry follows the
   * commits in their order. Across processes (two managers on one database) the transaction's row
   * lock is the authority (SqlPipelineStore).
   */
  private readonly writes = new KeyedMutex();
  /** Stored pipelines restore() skipped as invalid: a POST of the name replaces the row (it is not a duplicate). */
  private readonly unloadable = new Set<string>();

  constructor(
    private readonly deps: ManagerDeps,
    private readonly lifecycle: RegistryLifecycle,
  ) {}

  list(): Managed[] {
    return [...this.pipelines.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Every registered pipeline, in registration order. */
  values(): IterableIterator<Managed> {
    return this.pipelines.values();
  }

  get(name: string): Managed {
    const p = this.pipelines.get(name);
    if (!p) throw new ManagerError(404, `pipeline '${name}' not found`);
    return p;
  }

  /** The registered pipeline of that name, if any. */
  find(name: string): Managed | undefined {
    return this.pipelines.get(name);
  }

  /** False once `p` was replaced or deleted. */
  isCurrent(p: Managed): boolean {
    return this.pipelines.get(p.name) === p;
  }

  has(name: string) {
    return this.pipelines.has(name);
  }

  /** Validates YAML; a ManagerError(400) lists every problem. */
  parse(yaml: string, file?: string): PipelineConfig {
    const r = loadPipelineText(yaml, { file, statefulTransforms: this.deps.settings.STATEFUL_TRANSFORMS, envAllow: this.deps.settings.CONFIG_ENV_ALLOW });
    if (!r.config) {
      const errs = r.diagnostics.filter((d) => d.severity === 'error').map((d) => formatDiagnostic(d, file));
      throw new ManagerError(400, `invalid pipeline: ${errs.join('; ')}`);
    }
    return r.config;
  }

  /** Loads what the store holds (API-registered pipelines and the last known file ones). */
  async restore() {
    const latest = await this.deps.store.runs.latest();
    for (const sp of await this.deps.store.pipelines.list()) {
      try {
        const m = this.install(sp, this.parse(sp.yaml, sp.file ?? undefined));
        const last = latest.get(sp.name);
        if (last && !m.lastRun) m.lastRun = { at: last.finished_at ?? last.started_at, status: last.status };
        // Saved before desired states were remembered (migration 0007): its `enabled` is written
        // down now, so that from here on a new version's `enabled` no longer decides.
        if (sp.desired === null)
          await this.deps.store.pipelines
            .setDesired(sp.name, m.desired)
            .catch((e: unknown) => this.deps.log.warn({ pipeline: sp.name, err: errorMessage(e) }, 'desired state not written; written at the next start'));
      } catch (e) {
        this.unloadable.add(sp.name);
        this.deps.log.error({ pipeline: sp.name, err: errorMessage(e) }, 'stored pipeline no longer valid; skipped');
      }
    }
  }

  /**
   * Rescans a directory of pipeline YAML. A file wins over an API-registered pipeline of the same
   * name (the directory is the operator's source of truth); each change is a new version.
   */
  async loadDirectory(dir: string): Promise<{ reloaded: number; total: number; errors: string[] }> {
    let names: string[];
    try {
      names = (await readdir(dir)).filter((f) => /\.ya?ml$/i.test(f)).sort();
    } catch (e) {
      // No directory is a normal start (nothing to load), not an error.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { reloaded: 0, total: this.pipelines.size, errors: [] };
      return { reloaded: 0, total: this.pipelines.size, errors: [`cannot read SVC_PIPELINE_DIR ${dir}: ${errorMessage(e)}`] };
    }
    let reloaded = 0;
    const errors: string[] = [];
    for (const f of names) {
      const file = join(dir, f);
      try {
        const yaml = await readFile(file, 'utf8');
        const config = this.parse(yaml, file);
        const existing = this.pipelines.get(config.name);
        if (existing && existing.yaml === yaml && existing.origin === 'file') continue;
        await this.register(yaml, { origin: 'file', file, replace: true, config });
        reloaded++;
      } catch (e) {
        errors.push(`${f}: ${errorMessage(e)}`);
        this.deps.log.error({ file, err: errorMessage(e) }, 'pipeline file not loaded');
      }
    }
    return { reloaded, total: this.pipelines.size, errors };
  }

  /** Pipelines that came from `file` and whose file is gone are deregistered (SVC_WATCH_PIPELINES). */
  async forgetFile(file: string) {
    for (const p of this.list()) if (p.origin === 'file' && p.file === file) await this.remove(p.name);
  }

  /** Registers YAML (validated here unless the caller already has its `config`). */
  async register(
    yaml: string,
    opts: { origin: 'api' | 'file'; file?: string; replace?: boolean; config?: PipelineConfig } = { origin: 'api' },
  ): Promise<Managed> {
    const config = opts.config ?? this.parse(yaml, opts.file);
    return this.writes.run(config.name, () => this.registerNow(yaml, config, opts, opts.replace || this.unloadable.has(config.name) ? 'upsert' : 'create'));
  }

  /** register() and update() inside the name's turn; `mode` is what the database row must allow. */
  private async registerNow(
    yaml: string,
    config: PipelineConfig,
    opts: { origin: 'api' | 'file'; file?: string; replace?: boolean },
    mode: 'create' | 'update' | 'upsert',
  ): Promise<Managed> {
    const name = config.name;
    const taken = () => new ManagerError(409, `pipeline '${name}' is already registered; use PUT /api/pipelines/${name} to replace it`);
    const existing = this.pipelines.get(name);
    if (existing && !opts.replace) throw taken();
    let sp: StoredPipeline;
    try {
      // Saved first: when the database is unavailable the running pipeline is left untouched. The
      // YAML's `enabled` is the desired state of a pipeline this creates; one that exists keeps its own.
      const desired = config.enabled ? 'running' : 'stopped';
      sp = await this.deps.store.pipelines.save({ name, yaml, origin: opts.origin, file: opts.file ?? null, mode, desired });
    } catch (e) {
      if (!(e instanceof PipelineConflictError)) throw e;
      if (e.reason === 'exists') throw taken();
      // Deleted in the database by another manager: this registry follows it.
      if (existing) await this.unregister(existing);
      throw new ManagerError(404, `pipeline '${name}' not found (it was deleted meanwhile); register it again with POST /api/pipelines`);
    }
    if (existing) await this.lifecycle.halt(existing);
    const m = this.install(sp, config, existing);
    if (existing && config.enabled !== existing.config.enabled && (m.desired === 'running') !== config.enabled)
      this.deps.log.info(
        { pipeline: name, enabled: config.enabled, desired: m.desired },
        `\`enabled: ${config.enabled}\` applies to new pipelines only; this one stays ${m.desired} (POST /api/pipelines/${name}/${m.desired === 'running' ? 'stop' : 'start'} changes that)`,
      );
    return m;
  }

  /**
   * PUT: replaces the config of an existing pipeline (stopped, re-registered, restarted if its
   * desired state is running: a stopped pipeline stays stopped, whatever the new YAML's `enabled`).
   */
  async update(name: string, yaml: string): Promise<Managed> {
    this.get(name); // an unknown name is a 404 before its YAML is judged
    const config = this.parse(yaml);
    if (config.name !== name) throw new ManagerError(400, `the YAML names pipeline '${config.name}', not '${name}'; a pipeline cannot be renamed in place`);
    return this.writes.run(name, () => {
      // Read again in the name's turn: a write before this one may have replaced or deleted it.
      const current = this.get(name);
      return this.registerNow(yaml, config, { origin: current.origin === 'file' ? 'file' : 'api', file: current.file ?? undefined, replace: true }, 'update');
    });
  }

  remove(name: string): Promise<void> {
    return this.writes.run(name, () => this.removeNow(name));
  }

  private async removeNow(name: string) {
    // A stored pipeline restore() could not load has rows and nothing to stop.
    const p = this.unloadable.has(name) ? undefined : this.get(name);
    // The rows first: when the database is unavailable the pipeline stays as it was.
    await this.deps.store.pipelines.delete(name);
    this.unloadable.delete(name);
    if (p) await this.unregister(p);
    await this.deps.store.alerts.removeAll(name);
    await this.deps.store.processed.clear(name);
    await this.deps.store.transformState.clear(name);
    await this.deps.store.dlqReplayed.clear(name);
    await forgetPipelineFiles(this.deps.stateDir, name); // webhook spools and file-based memory (issue 17)
    this.deps.metrics.forget(name);
  }

  /** Takes a pipeline whose rows are gone out of the registry, then stops it. */
  private async unregister(p: Managed) {
    this.pipelines.delete(p.name);
    this.deps.onConfig?.(p.name, undefined);
    await this.lifecycle.halt(p);
  }

  /**
   * start (`running`) and stop (`stopped`): remembered in the store first (when the database is
   * unavailable nothing changes), then the schedule is armed or the pipeline halted (its run drains).
   */
  desire(name: string, desired: DesiredState): Promise<Managed> {
    this.get(name); // an unknown name is a 404 at once
    return this.writes.run(name, async () => {
      const p = this.get(name);
      if (!(await this.deps.store.pipelines.setDesired(name, desired))) {
        // Deleted in the database by another manager: this registry follows it.
        await this.unregister(p);
        throw new ManagerError(404, `pipeline '${name}' not found (it was deleted meanwhile)`);
      }
      p.desired = desired;
      if (desired === 'stopped') await this.lifecycle.halt(p);
      else {
        p.halted = false;
        this.lifecycle.arm(p);
      }
      return p;
    });
  }

  rollback(name: string, version: number): Promise<Managed> {
    return this.writes.run(name, async () => {
      const p = this.get(name);
      const missing = () => new ManagerError(404, `pipeline '${name}' has no version ${version}; see GET /api/pipelines/${name}/versions`);
      const yaml = await this.deps.store.pipelines.versionYaml(name, version);
      if (yaml === undefined) throw missing();
      const config = this.parse(yaml);
      // Activated first: when the database is unavailable the running pipeline is left untouched.
      if (!(await this.deps.store.pipelines.activate(name, version))) throw missing();
      const sp = await this.deps.store.pipelines.get(name);
      if (!sp) throw missing();
      await this.lifecycle.halt(p);
      return this.install(sp, config, p);
    });
  }

  private install(sp: StoredPipeline, config: PipelineConfig, previous?: Managed): Managed {
    // The remembered state; the YAML's `enabled` only for a pipeline saved before it was remembered.
    const desired: DesiredState = sp.desired ?? previous?.desired ?? (config.enabled ? 'running' : 'stopped');
    const m: Managed = {
      name: sp.name,
      yaml: sp.yaml,
      config,
      origin: sp.origin,
      file: sp.file,
      version: sp.version,
      status: 'stopped',
      breakers: previous?.breakers ?? new Map(),
      restarts: 0,
      desired,
      // A stopped pipeline: nothing starts it (a schedule, a restart, a run found on a worker) but start().
      halted: desired === 'stopped',
      lastRun: previous?.lastRun,
    };
    this.pipelines.set(m.name, m);
    this.unloadable.delete(m.name);
    if (previous?.service) m.service = previous.service;
    this.deps.onConfig?.(m.name, config);
    if (desired === 'running' && config.schedule.type !== 'manual') this.lifecycle.arm(m);
    return m;
  }
}
