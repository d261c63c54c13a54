// SVC_WATCH_PIPELINES: changed YAML in the pipeline directory is reloaded, deleted files deregister
// their pipeline. Events are debounced: editors write files in several steps.
import { watch, type FSWatcher } from 'node:fs';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../observability/log.js';
import type { PipelineManager } from './pipeline-manager.js';

export function watchPipelines(dir: string, manager: PipelineManager, log: Logger, debounceMs = 300): () => void {
  let timer: NodeJS.Timeout | undefined;
  const changed = new Set<string>();
  const flush = async () => {
    const files = [...changed];
    changed.clear();
    for (const f of files) {
      const file = join(dir, f);
      if (!existsSync(file)) await manager.forgetFile(file).catch((e: unknown) => log.error({ file, err: String(e) }, 'deregister failed'));
    }
    const r = await manager.loadDirectory(dir);
    if (r.reloaded || r.errors.length) log.info({ reloaded: r.reloaded, errors: r.errors }, 'pipeline directory reloaded');
  };
  let w: FSWatcher;
  try {
    w = watch(dir, (_event, name) => {
      if (!name || !/\.ya?ml$/i.test(name.toString())) return;
      changed.add(name.toString());
      clearTimeout(timer);
      timer = setTimeout(() => void flush(), debounceMs);
    });
  } catch (e) {
    log.error({ dir, err: String(e) }, 'cannot watch SVC_PIPELINE_DIR');
    return () => {};
  }
  return () => {
    clearTimeout(timer);
    w.close();
  };
}
