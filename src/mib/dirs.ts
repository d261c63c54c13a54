// The MIB store's two folders from the settings. Spec doc 2's defaults are the container's: /mibs
// for compiled modules, and for sources `mib-sources` beside SVC_MIB_DIR (/mib-sources). Outside a
// container these are at the filesystem root, where a user usually cannot write (and should not have
// folders made for them): when a variable is unset and its default folder cannot be written, the
// store uses a folder of the same name under the data home (~/.svc) instead, and says so once.
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, join, parse, resolve } from 'node:path';
import { dataHome, type Settings } from '../settings.js';

export type MibDirSettings = Pick<Settings, 'MIB_DIR' | 'MIB_SOURCE_DIR' | 'defaulted'>;

export interface MibDirs {
  /** SVC_MIB_DIR, or its fallback. */
  compiledDir: string;
  /** SVC_MIB_SOURCE_DIR, or the default beside SVC_MIB_DIR, or its fallback. */
  sourceDir: string;
  /** One sentence per fallback taken (for the log). */
  fallbacks: { variable: string; default: string; dir: string; message: string }[];
}

/** True when `dir` can be written, or created (its nearest existing ancestor can be written). */
export function writableDir(dir: string): boolean {
  let d = resolve(dir);
  for (;;) {
    try {
      if (!statSync(d).isDirectory()) return false;
      accessSync(d, constants.W_OK);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return false;
      if (d === parse(d).root) return false;
      d = dirname(d);
    }
  }
}

/** The folders the MIB store uses (see the file comment); `home` is the data home (tests give their own). */
export function mibDirs(s: MibDirSettings, home = dataHome()): MibDirs {
  const fallbacks: MibDirs['fallbacks'] = [];
  const unset = (key: 'MIB_DIR' | 'MIB_SOURCE_DIR') => s.defaulted?.includes(key) ?? false;
  const fallBack = (variable: string, def: string, name: string, what: string) => {
    const dir = join(home, name);
    fallbacks.push({
      variable,
      default: def,
      dir,
      message: `${variable} is unset and ${def} cannot be written: ${what} are kept in ${dir} (set ${variable} to choose the folder)`,
    });
    return dir;
  };
  let compiledDir = s.MIB_DIR;
  if (unset('MIB_DIR') && !writableDir(compiledDir)) compiledDir = fallBack('SVC_MIB_DIR', s.MIB_DIR, 'mibs', 'compiled MIB modules');
  let sourceDir = s.MIB_SOURCE_DIR || join(dirname(resolve(s.MIB_DIR)), 'mib-sources');
  if (!s.MIB_SOURCE_DIR && unset('MIB_SOURCE_DIR') && !writableDir(sourceDir))
    sourceDir = fallBack('SVC_MIB_SOURCE_DIR', sourceDir, 'mib-sources', 'uploaded MIB sources');
  return { compiledDir, sourceDir, fallbacks };
}
