// Every pipeline file in examples/ (the README's walk-through) validates as it is, with the
// defaults of its ${VAR:-default} references.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipelineText } from '../../src/config/load.js';
import { formatDiagnostic } from '../../src/config/diagnostics.js';

const dir = join(import.meta.dirname, '..', '..', 'examples');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));

describe('examples/*.yaml', () => {
  it('there are examples', () => expect(files.length).toBeGreaterThan(1));
  it.each(files)('%s validates with no diagnostics', (f) => {
    const r = loadPipelineText(readFileSync(join(dir, f), 'utf8'), { env: {}, file: f });
    expect(r.diagnostics.map((d) => formatDiagnostic(d, f))).toEqual([]);
    expect(r.config).toBeDefined();
  });
});
