// The compile cache: the compiled modules persisted as JSON in SVC_MIB_DIR (one `<MODULE>.json`
// each, and a manifest written last), loaded at the next start when the sources have not changed.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { join } from 'node:path';
import { readJsonFile, writeFileDurably } from '../util/durable.js';
import { compiledFromJson } from './index.js';
import { MibIndex } from './mib-index.js';
import type { CompileMode, SourceFile } from './sources.js';
import { MIB_FORMAT, type CompiledModule, type FailureView, type ShadowedModule } from './types.js';

/** One compile of the whole source set: what the store serves until the next change. */
export interface Compiled {
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

const MANIFEST = '_manifest.json';

/** What a compile depends on: the format, the compile modes and each source's path, place, size and time. */
export function fingerprint(sources: SourceFile[], modes: Record<string, CompileMode>): string {
  const h = createHash('sha256').update(`${MIB_FORMAT}\n${JSON.stringify(modes)}\n`);
  for (const s of sources) h.update(`${s.path}\0${s.abs}\0${s.size}\0${s.mtimeMs}\n`);
  return h.digest('hex');
}

export class CompileCache {
  /** Persistence warnings already logged (each once, not once for all). */
  private readonly persistWarned = new Set<string>();

  constructor(
    private readonly dir: string,
    private readonly log?: { warn(o: object, m: string): void },
  ) {}

  /** Writes `st` with the fingerprint of its sources; a failure is logged and the modules stay in memory. */
  async save(st: Compiled, fingerprint: string) {
    const dir = this.dir;
    // Each failure is logged with its own error, once per kind (not once for good): a module that
    // cannot be written does not hide a later, different problem.
    const warn = (e: unknown, what: string, module?: string) => {
      const err = e as NodeJS.ErrnoException;
      const key = `${module ?? ''}\0${err.code ?? err.message}`;
      if (this.persistWarned.has(key)) return;
      this.persistWarned.add(key);
      this.log?.warn(
        { dir, ...(module ? { module } : {}), err: err.message },
        `${what} (${err.code ?? err.message}): compiled MIB modules are kept in memory, and the next start compiles again`,
      );
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
      const manifest: Manifest = {
        format: MIB_FORMAT,
        fingerprint,
        compiled_at: st.compiledAt,
        modules: [...st.byName.keys()],
        failed: st.failed,
        shadowed: st.shadowed,
      };
      await writeFileDurably(join(dir, MANIFEST), JSON.stringify(manifest), 0o644);
    } catch (e) {
      warn(e, 'cannot persist the compiled MIB modules in SVC_MIB_DIR');
    }
  }

  /** The persisted compile of `sources` when its fingerprint matches, else undefined. */
  async load(sources: SourceFile[], fingerprint: string): Promise<Compiled | undefined> {
    const dir = this.dir;
    const manifest = await readJsonFile<Manifest>(join(dir, MANIFEST)).catch(() => undefined);
    if (!manifest || manifest.format !== MIB_FORMAT || manifest.fingerprint !== fingerprint) return undefined;
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
}
