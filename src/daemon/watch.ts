// SVC_WATCH_PIPELINES: changed YAML in the pipeline directory is reloaded (a new version), a deleted
// (or renamed away) file deregisters its pipeline.
//
// Any event in the directory triggers one debounced rescan of the whole directory rather than
// acting on the event's file name: editors save through a temporary file and a rename, some
// platforms report no name, and a Kubernetes ConfigMap swaps a `..data` symlink without touching
// the YAML names. Rescans run one at a time; an invalid file is logged and the version already
// loaded stays live. Deletions are judged against the files seen at the previous scan, so a
// pipeline whose file was removed while the daemon was down is left alone.
import { readdirSync, watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import type { PipelineManager } from '../pipelines/pipeline-manager.js';

const YAML = /\.ya?ml$/i;

/** Retry interval while SVC_PIPELINE_DIR does not exist (or cannot be watched). */
const DIR_RETRY_MS = 1000;

/** The YAML file names of the directory, undefined when it cannot be read. */
function listYaml(dir: string): Set<string> | undefined {
  try {
    return new Set(readdirSync(dir).filter((f) => YAML.test(f)));
  } catch {
    return undefined;
  }
}

export function watchPipelines(dir: string, manager: PipelineManager, log: Logger, debounceMs = 300): () => void {
  let closed = false;
  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  let retry: NodeJS.Timeout | undefined;
  let waitingLogged = false;
  let busy = false;
  let again = false;
  /** YAML files present at the previous scan. */
  let known = listYaml(dir) ?? new Set<string>();

  const changed = () => {
    if (closed) return;
    clearTimeout(debounce);
    debounce = setTimeout(() => void flush(), debounceMs);
  };

  const flush = async () => {
    if (closed) return;
    if (busy) {
      again = true; // picked up when the running rescan ends
      return;
    }
    busy = true;
    try {
      await rescan();
    } catch (e) {
      log.error({ dir, err: errorMessage(e) }, 'pipeline directory rescan failed');
    } finally {
      busy = false;
    }
    if (again) {
      again = false;
      changed();
    }
  };

  const rescan = async () => {
    const now = listYaml(dir);
    if (!now) {
      // The directory itself went away (or became unreadable): keep what is loaded and wait for it.
      log.warn({ dir }, 'SVC_PIPELINE_DIR is gone or unreadable; its pipelines stay registered until it is back');
      unwatchDir();
      waitForDir();
      return;
    }
    const gone = new Set([...known].filter((f) => !now.has(f)).map((f) => resolve(dir, f)));
    known = now;

    const r = await manager.loadDirectory(dir);
    if (r.reloaded || r.errors.length) log.info({ dir, reloaded: r.reloaded, errors: r.errors }, 'pipeline directory reloaded');

    // Which pipeline each valid file defines now (invalid files were logged by loadDirectory).
    const defines = new Map<string, { file: string; name: string; yaml: string }>();
    for (const f of now) {
      const file = join(dir, f);
      try {
        const yaml = await readFile(file, 'utf8');
        defines.set(resolve(file), { file, name: manager.parse(yaml, file).name, yaml });
      } catch {
        /* invalid or unreadable: the loaded version stays live */
      }
    }
    for (const p of manager.list()) {
      if (p.origin !== 'file' || !p.file) continue;
      const path = resolve(p.file);
      const own = defines.get(path);
      // Its file was deleted or renamed away, or now defines another pipeline.
      if (!gone.has(path) && !(own && own.name !== p.name)) continue;
      const heir = [...defines.values()].find((d) => d.name === p.name);
      try {
        if (heir) {
          // Moved to another file with the same YAML: only where it comes from changes.
          await manager.register(heir.yaml, { origin: 'file', file: heir.file, replace: true });
          log.info({ pipeline: p.name, from: p.file, to: heir.file }, 'pipeline file moved');
        } else {
          await manager.remove(p.name);
          log.info({ pipeline: p.name, file: p.file }, 'pipeline file removed; pipeline deregistered');
        }
      } catch (e) {
        log.error({ pipeline: p.name, file: p.file, err: errorMessage(e) }, 'pipeline file removed; deregister failed');
      }
    }
  };

  const watchDir = (): boolean => {
    try {
      const w = watch(dir, () => changed());
      // Without a listener an 'error' (directory removed on some platforms) would end the process.
      w.on('error', (e) => {
        log.warn({ dir, err: errorMessage(e) }, 'watching SVC_PIPELINE_DIR failed; watching again when it is back');
        unwatchDir();
        waitForDir();
      });
      watcher = w;
      return true;
    } catch (e) {
      if (!waitingLogged) {
        waitingLogged = true;
        const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
        if (missing) log.info({ dir }, 'SVC_PIPELINE_DIR does not exist yet; watching for it');
        else log.error({ dir, err: errorMessage(e) }, 'cannot watch SVC_PIPELINE_DIR; trying again every second');
      }
      return false;
    }
  };

  const unwatchDir = () => {
    watcher?.close();
    watcher = undefined;
  };

  const waitForDir = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      if (closed) return;
      if (watchDir()) {
        waitingLogged = false;
        log.info({ dir }, 'watching SVC_PIPELINE_DIR');
        changed();
      } else waitForDir();
    }, DIR_RETRY_MS);
    retry.unref();
  };

  if (!watchDir()) waitForDir();
  return () => {
    closed = true;
    clearTimeout(debounce);
    clearTimeout(retry);
    unwatchDir();
  };
}
