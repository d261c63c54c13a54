// Pipeline templates for GET /api/templates: the YAML files of SVC_TEMPLATES_DIR (default: the
// templates/ folder shipped with svc). Name from the file, description from pipeline.description.
// A template's `svc test` file (`<name>.test.yaml`, beside it) is not a template.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { isTestFile } from '../testing/load.js';

export const BUNDLED_TEMPLATES = fileURLToPath(new URL('../../templates/', import.meta.url));

export interface Template {
  name: string;
  description: string;
  yaml: string;
}

/** A pipeline YAML file, not the test file of one (`svc test` reads `*.test.yaml`). */
export function isTemplateFile(name: string): boolean {
  return /\.ya?ml$/i.test(name) && !isTestFile(name);
}

export async function loadTemplates(dir = ''): Promise<Template[]> {
  const root = dir || BUNDLED_TEMPLATES;
  const files = (await readdir(root).catch(() => [] as string[])).filter(isTemplateFile).sort();
  return Promise.all(
    files.map(async (f) => {
      const yaml = await readFile(join(root, f), 'utf8');
      let description: string;
      try {
        description = String((parse(yaml) as { pipeline?: { description?: unknown } })?.pipeline?.description ?? '');
      } catch {
        description = '(this template is not valid YAML)';
      }
      return { name: f.replace(/\.ya?ml$/i, ''), description, yaml };
    }),
  );
}
