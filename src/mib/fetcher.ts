// The network fetcher of missing MIB modules: from the bundled library (every MIB-like file below
// the bundled directories), else from an online MIB repository (SVC_MIB_REPOSITORY_URL).
import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import { basename, join } from 'node:path';
import { definedModules, hasExt, MIB_MAX_FILE_BYTES, type BundledDir } from './sources.js';

/** How deep fetch-dependencies looks into bundled directories, and how many files at most. */
const LIBRARY_DEPTH = 6;
const LIBRARY_FILES = 50000;
const REPOSITORY_TIMEOUT_MS = 10000;

/**
 * A repository URL as fetch can take it: Node's fetch refuses `user:password@` in a URL (and its
 * error would echo them), so they go as Basic authorization. `shown` is the URL for messages, with
 * `***` for the credentials; url is '' for a malformed URL.
 */
function repositoryRequest(raw: string): { url: string; headers: Record<string, string>; shown: string } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { url: '', headers: {}, shown: '' };
  }
  if (!u.username && !u.password) return { url: u.href, headers: {}, shown: u.href };
  const dec = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const headers = { authorization: `Basic ${Buffer.from(`${dec(u.username)}:${dec(u.password)}`).toString('base64')}` };
  u.username = '';
  u.password = '';
  return { url: u.href, headers, shown: u.href.replace('//', '//***@') };
}

export class MibFetcher {
  constructor(private readonly bundled: BundledDir[]) {}

  /** Module name -> file, for every MIB-like file anywhere below the bundled directories. */
  async library(): Promise<Map<string, string>> {
    const lib = new Map<string, string>();
    let count = 0;
    const walkDir = async (dir: string, depth: number) => {
      let entries: Dirent[];
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (count >= LIBRARY_FILES || e.name.startsWith('.')) continue;
        const abs = join(dir, e.name);
        if (e.isDirectory() && depth < LIBRARY_DEPTH) await walkDir(abs, depth + 1);
        else if ((e.isFile() || e.isSymbolicLink()) && hasExt(e.name)) {
          count++;
          const text = await fs.readFile(abs, 'utf8').catch(() => '');
          for (const m of definedModules(text)) if (!lib.has(m)) lib.set(m, abs);
        }
      }
    };
    for (const b of this.bundled) await walkDir(b.dir, 0);
    return lib;
  }

  /** A module's source from the bundled library, else the repository; throws with the reason. */
  async findSource(module: string, library: Map<string, string>, repositoryUrl?: string): Promise<{ name: string; data: Buffer; from: string }> {
    const local = library.get(module);
    if (local) return { name: basename(local), data: await fs.readFile(local), from: local };
    if (!repositoryUrl)
      throw new Error(`${module}: not found in the bundled sources (${this.bundled.map((b) => b.dir).join(', ')}) and no MIB repository URL is configured`);
    const raw = repositoryUrl.includes('@mib@')
      ? repositoryUrl.replaceAll('@mib@', encodeURIComponent(module))
      : `${repositoryUrl.replace(/\/+$/, '')}/${encodeURIComponent(module)}`;
    const { url, headers, shown } = repositoryRequest(raw);
    if (!url) throw new Error(`${module}: the MIB repository URL is not a valid URL; check mib_repository_url`);
    // Error texts (of fetch too) may quote the URL: only the form without the password goes out.
    const hide = (text: string) => text.replaceAll(raw, shown).replaceAll(url, shown);
    let res: Response;
    try {
      res = await fetch(url, { headers, signal: AbortSignal.timeout(REPOSITORY_TIMEOUT_MS) });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
      throw new Error(`${module}: the MIB repository ${shown} cannot be reached (${hide(cause)}); check mib_repository_url and the network`, { cause: e });
    }
    if (res.status === 404) throw new Error(`${module}: not found in the bundled sources or at ${shown}`);
    if (!res.ok) throw new Error(`${module}: the MIB repository answered ${res.status} for ${shown}`);
    const data = Buffer.from(await res.arrayBuffer());
    if (data.length > MIB_MAX_FILE_BYTES) throw new Error(`${module}: ${shown} sent more than ${MIB_MAX_FILE_BYTES} bytes`);
    if (!definedModules(data.toString('utf8')).includes(module)) throw new Error(`${module}: ${shown} did not return a MIB module named ${module}`);
    return { name: `${module}.mib`, data, from: shown };
  }
}
