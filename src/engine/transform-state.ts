// Where the state of stateful transforms lives between runs: the daemon's database, or a JSON file
// beside the processed-file memory for `svc run`. A stored state belongs to a config hash and is
// discarded (with a warning) when the pipeline's stateful transforms changed since.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { PipelineConfig } from '../config/pipeline-schema.js';
import type { Registry } from '../config/load.js';
import type { Logger } from '../observability/log.js';
import { registry as defaultRegistry } from '../plugins/registry.js';
import type { TransformPlugin } from '../plugins/types.js';
import type { TransformStateStore } from '../store/types.js';
import { writeFileDurably } from '../util/durable.js';
import { defaultStateDir } from '../plugins/connector-runtime/processed-files.js';
import type { TransformStateIO } from './runner.js';

/** The pipeline-level transforms that keep durable state, with their state keys. */
export function statefulTransforms(config: PipelineConfig, reg: Registry = defaultRegistry) {
  return config.transforms
    .map((t, i) => ({ key: `transforms[${i}].${t.type}`, config: t }))
    .filter((t) => (reg.transform.get(t.config.type) as TransformPlugin | undefined)?.stateful);
}

/** Fresh instances of those transforms: a state body is checked by loading it into one. */
export function statefulInstances(config: PipelineConfig, log: Logger, reg: Registry = defaultRegistry) {
  return statefulTransforms(config, reg).map((t) => ({
    key: t.key,
    transform: (reg.transform.get(t.config.type) as TransformPlugin).create(t.config as never, { pipeline: config.name, log }),
  }));
}

/**
 * The hash a stored state is checked against: the stateful transforms' positions, types and
 * parameters. Other edits (a sink, the schedule) keep the state; changing one of those transforms
 * (key fields, window length...) or moving it discards it.
 */
export function stateConfigHash(config: PipelineConfig, reg: Registry = defaultRegistry): string {
  const parts = statefulTransforms(config, reg).map((t) => [t.key, canonical(t.config)]);
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** JSON with sorted keys, so that the same config always hashes the same. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (typeof v === 'object' && v !== null)
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  return v;
}

/** State kept in the database (daemon). */
export function storeStateIO(store: TransformStateStore, pipeline: string, hash: string, log: Logger): TransformStateIO {
  return {
    async load() {
      const s = await store.get(pipeline);
      if (!s) return null;
      if (s.config_sha256 !== hash) {
        log.warn({ stored: s.config_sha256, current: hash }, 'stored transform state discarded: the stateful transforms changed');
        return null;
      }
      return s.state;
    },
    save: (state) => store.put(pipeline, state, hash),
  };
}

export function stateFilePath(pipeline: string, stateDir = defaultStateDir()): string {
  return path.join(stateDir, `${pipeline.replace(/[^\w.-]/g, '_')}.transform-state.json`);
}

/** State kept in a file (`svc run`): written to a temporary file, synced, then renamed over. */
export function fileStateIO(file: string, hash: string, log: Logger): TransformStateIO {
  return {
    async load() {
      let text: string;
      try {
        text = await fs.readFile(file, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw e;
      }
      try {
        const body = JSON.parse(text) as { config_sha256?: unknown; state?: unknown };
        if (body.config_sha256 !== hash) {
          log.warn({ file }, 'stored transform state discarded: the stateful transforms changed');
          return null;
        }
        return body.state as Record<string, unknown>;
      } catch (e) {
        log.warn({ file, err: (e as Error).message }, 'stored transform state discarded: the file is not JSON');
        return null;
      }
    },
    save: (state) => writeFileDurably(file, JSON.stringify({ config_sha256: hash, state })),
  };
}
