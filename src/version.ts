// The package version and when this build was made, read once.
import { readFileSync, statSync } from 'node:fs';

const pkgUrl = new URL('../package.json', import.meta.url);
export const version: string = (JSON.parse(readFileSync(pkgUrl, 'utf8')) as { version: string }).version;
/** The build time: when this module's file was written (dist/ by `npm run build`). */
export const buildTime: string = statSync(new URL(import.meta.url)).mtime.toISOString();
