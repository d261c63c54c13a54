// Reads back a DLQ written by the `local` sink: every file under `path` (recursively; hidden
// files, such as single mode's temporaries, skipped), oldest first, as listed when the read began.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { DlqItem, DlqReader } from '../../types.js';

async function filesUnder(root: string): Promise<{ rel: string; mtime: number }[]> {
  const out: { rel: string; mtime: number }[] = [];
  const walk = async (dir: string) => {
    let names: import('node:fs').Dirent[];
    try {
      names = await fs.readdir(dir, { withFileTypes: true });
    } catch (e) {
      // No directory yet: nothing was dead-lettered.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && dir === root) return;
      throw e;
    }
    for (const d of names) {
      if (d.name.startsWith('.')) continue;
      const full = path.join(dir, d.name);
      if (d.isDirectory()) await walk(full);
      else if (d.isFile()) out.push({ rel: path.relative(root, full), mtime: (await fs.stat(full)).mtimeMs });
    }
  };
  await walk(root);
  return out.sort((a, b) => a.mtime - b.mtime || a.rel.localeCompare(b.rel));
}

export function localDlqReader(c: { path: string }): DlqReader {
  const root = path.resolve(c.path);
  return {
    async *read(): AsyncIterable<DlqItem> {
      for (const f of await filesUnder(root)) {
        const payload = await fs.readFile(path.join(root, f.rel)).catch((e: NodeJS.ErrnoException) => {
          if (e.code === 'ENOENT') return undefined; // removed since the listing
          throw e;
        });
        if (payload) yield { location: f.rel, payload };
      }
    },
  };
}
