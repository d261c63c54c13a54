import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fs.js';
import { loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';
import { loadTemplates } from '../../src/daemon/templates.js';

describe('bundled templates', () => {
  it('are several, each described, and each a valid pipeline with its defaults', async () => {
    const templates = await loadTemplates();
    expect(templates.length).toBeGreaterThanOrEqual(4);
    for (const t of templates) {
      expect(t.description.length, t.name).toBeGreaterThan(10);
      const r = loadPipelineText(t.yaml, { env: {} });
      expect(r.diagnostics.map((d) => formatDiagnostic(d, t.name)), t.name).toEqual([]);
      expect(r.config!.name).toBe(t.name);
    }
  });

  it('reads another directory when SVC_TEMPLATES_DIR names one, and an empty list for a missing one', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'mine.yaml'), 'version: "1"\npipeline:\n  name: mine\n  description: my own template\n');
    writeFileSync(join(dir, 'broken.yml'), 'pipeline: [unclosed\n');
    writeFileSync(join(dir, 'notes.txt'), 'not a template');
    expect(await loadTemplates(dir)).toEqual([
      { name: 'broken', description: '(this template is not valid YAML)', yaml: 'pipeline: [unclosed\n' },
      { name: 'mine', description: 'my own template', yaml: 'version: "1"\npipeline:\n  name: mine\n  description: my own template\n' },
    ]);
    expect(await loadTemplates('/nonexistent-dir')).toEqual([]);
  });
});
