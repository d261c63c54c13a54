// The package version and when this build was made, read once.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package.json above this module (src/, dist/ or a benchmark build). */
function packageJson(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const f = join(dir, 'package.json');
    if (existsSync(f)) return f;
    if (dirname(dir) === dir) throw new Error('package.json of svc not found');
  }
}

export const version: string = (JSON.parse(readFileSync(packageJson(), 'utf8')) as { version: string }).version;
/** The build time: when this module's file was written (dist/ by `npm run build`). */
export const buildTime: string = statSync(fileURLToPath(import.meta.url)).mtime.toISOString();
