// Every input the fuzzer found (npm run fuzz, fuzz/run.ts) replays through its target: it must now
// end in the parser's own typed error or in success, within the 1 s and memory bounds
// (fuzz/exec.ts). A target folder holds <hash>.bin (the input) and <hash>.txt (what it did then).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execOnce, HANG_MS, tooMuchMemory } from '../../fuzz/exec.js';
import { targetNamed } from '../../fuzz/targets.js';

const DIR = import.meta.dirname;
const folders = readdirSync(DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

describe('fuzz regressions', () => {
  it('each folder is a fuzz target with its inputs and notes', () => {
    for (const f of folders) {
      expect(targetNamed(f), `test/fuzz-regressions/${f} names no target`).toBeDefined();
      for (const bin of readdirSync(join(DIR, f)).filter((n) => n.endsWith('.bin'))) expect(existsSync(join(DIR, f, bin.replace(/\.bin$/, '.txt')))).toBe(true);
    }
  });

  for (const f of folders) {
    const t = targetNamed(f);
    if (!t) continue;
    for (const bin of readdirSync(join(DIR, f)).filter((n) => n.endsWith('.bin'))) {
      it(`${f}/${bin}`, async () => {
        const input = readFileSync(join(DIR, f, bin));
        const note = readFileSync(join(DIR, f, bin.replace(/\.bin$/, '.txt')), 'utf8')
          .split('\n')
          .slice(0, 3)
          .join('; ');
        const r = await execOnce(t, input);
        if (r.kind === 'finding') throw new Error(`still a finding (${note}): ${(r.error as Error).stack}`, { cause: r.error });
        // The bound for a hang; the inputs are small, so a fixed parser takes milliseconds.
        expect(r.ms, note).toBeLessThan(HANG_MS);
        expect(tooMuchMemory(r.rssGrowth, input.length), note).toBe(false);
      });
    }
  }
});
