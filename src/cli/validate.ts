// `svc validate FILE`, and the reading of a pipeline file that `svc run` shares with it.
import { readFileSync } from 'node:fs';
import { formatDiagnostic } from '../config/diagnostics.js';
import { checkPipelineText, type LoadResult } from '../config/pipeline-check.js';
import { registryFor } from './plugin-loader.js';
import { usage } from './usage.js';

/** The file's text, or exit 1 with why it cannot be read (64 without a FILE). */
function readText(file: string | undefined): { file: string; text: string } {
  if (!file) usage('missing pipeline FILE');
  try {
    return { file, text: readFileSync(file, 'utf8') };
  } catch (e) {
    process.stderr.write(`svc: cannot read ${file}: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

/**
 * Checks FILE and prints its diagnostics to stderr. First against only the plugins it names (fast);
 * when that finds an unknown plugin type, again against the full registry, whose answer lists every
 * registered type and suggests the nearest, as `svc run` and the API do.
 */
export async function readConfig(file: string | undefined): Promise<LoadResult> {
  const { file: name, text } = readText(file);
  let r = checkPipelineText(text, { file: name, registry: await registryFor(text) });
  if (r.diagnostics.some((d) => d.code === 'CFG_UNKNOWN_PLUGIN')) {
    const { registry } = await import('../plugins/registry.js');
    r = checkPipelineText(text, { file: name, registry });
  }
  for (const d of r.diagnostics) process.stderr.write(formatDiagnostic(d, name) + '\n');
  return r;
}

export async function cmdValidate(file: string | undefined): Promise<number> {
  const r = await readConfig(file);
  if (!r.config) {
    const n = r.diagnostics.filter((d) => d.severity === 'error').length;
    process.stderr.write(`${file}: ${n} error${n === 1 ? '' : 's'}\n`);
    return 1;
  }
  process.stdout.write(`${file}: valid (pipeline '${r.config.name}')\n`);
  return 0;
}
