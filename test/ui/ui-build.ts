// The web UI built from the current ui/ sources for the UI tests, once per source state: the build
// goes to a folder named by a hash of ui/ (so concurrent test files share it and a stale dist/ui is
// never what is tested), written beside it first and renamed into place.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const UI = join(ROOT, 'ui');

function files(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? files(p) : [p];
    })
    .sort();
}

function sourceHash(): string {
  const h = createHash('sha256');
  for (const f of files(UI)) h.update(relative(UI, f)).update('\0').update(readFileSync(f));
  return h.digest('hex').slice(0, 16);
}

let built: Promise<string> | undefined;

/** The folder of a build of the current ui/ sources (index.html and assets/). */
export function builtUi(): Promise<string> {
  return (built ??= (async () => {
    // SVC_UI_TEST_CACHE: another folder, for checkouts that share one node_modules (git worktrees),
    // where each would otherwise remove the others' builds.
    const cache = process.env.SVC_UI_TEST_CACHE || join(ROOT, 'node_modules', '.cache', 'svc-ui-test');
    const dir = join(cache, sourceHash());
    if (existsSync(join(dir, 'index.html'))) return dir;
    const tmp = `${dir}.tmp-${process.pid}`;
    mkdirSync(cache, { recursive: true });
    await build({ configFile: join(UI, 'vite.config.ts'), logLevel: 'error', build: { outDir: tmp, emptyOutDir: true } });
    try {
      renameSync(tmp, dir);
    } catch {
      // Another test file finished the same build first: use its copy.
      rmSync(tmp, { recursive: true, force: true });
    }
    // Builds of earlier source states are of no further use.
    for (const old of readdirSync(cache)) if (old !== basename(dir) && !old.includes('.tmp-')) rmSync(join(cache, old), { recursive: true, force: true });
    return dir;
  })());
}
