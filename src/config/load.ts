// Pipeline YAML -> a validated, defaulted PipelineConfig (pipeline-check.ts) against every
// registered plugin, unless the caller passes a registry of its own.
import { readFile } from 'node:fs/promises';
import { registry as defaultRegistry } from '../plugins/registry.js';
import { ConfigInvalidError, type Diagnostic } from './diagnostics.js';
import { checkComponentConfig, checkPipelineText, type LoadOptions, type LoadResult } from './pipeline-check.js';
import type { ComponentConfig, PipelineConfig } from './pipeline-schema.js';

export { positionOf, type LoadOptions, type LoadResult, type Registry } from './pipeline-check.js';

/** Parses and validates pipeline YAML text. */
export function loadPipelineText(text: string, opts: LoadOptions = {}): LoadResult {
  return checkPipelineText(text, { ...opts, registry: opts.registry ?? defaultRegistry });
}

/** Loads a pipeline file; throws ConfigInvalidError listing every error. */
export async function loadPipelineFile(file: string, opts: Omit<LoadOptions, 'file'> = {}): Promise<LoadResult & { config: PipelineConfig }> {
  const text = await readFile(file, 'utf8');
  const r = loadPipelineText(text, { ...opts, file });
  if (!r.config) throw new ConfigInvalidError(r.diagnostics, file);
  return r as LoadResult & { config: PipelineConfig };
}

/** Validates one source or sink on its own (checkComponentConfig), against every plugin by default. */
export function loadComponent(
  kind: 'source' | 'sink',
  raw: unknown,
  opts: Pick<LoadOptions, 'env' | 'envAllow' | 'registry'> = {},
): { config?: ComponentConfig; diagnostics: Diagnostic[] } {
  return checkComponentConfig(kind, raw, { env: opts.env, envAllow: opts.envAllow, registry: opts.registry ?? defaultRegistry });
}
