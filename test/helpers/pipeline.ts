import { loadPipelineText } from '../../src/config/load.js';
import type { PipelineConfig } from '../../src/config/pipeline-schema.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { testRegistry } from './plugins.js';

/** Validates YAML with the test registry; throws with every diagnostic when invalid. */
export function pipeline(yaml: string): PipelineConfig {
  const r = loadPipelineText(yaml, { registry: testRegistry, env: {} });
  if (!r.config) throw new Error(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'));
  return r.config;
}
