import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/** fsync a directory so that a rename or create inside it survives a crash. */
export async function syncDir(dir: string): Promise<void> {
  const d = await fs.open(dir, 'r');
  try {
    await d.sync();
  } catch {
    // Some file systems cannot fsync a directory; the file itself is synced.
  } finally {
    await d.close();
  }
}

/** Writes `data` to `file` so that a crash leaves either the old or the new content: temp file, fsync, rename, fsync dir. */
export async function writeFileDurably(file: string, data: string | Buffer, mode = 0o600): Promise<void> {
  const dir = path.dirname(file);
  await fs.mkdir(dir, { recursive: true });
  // Hidden and unique: folder listings (schemas, MIB sources) skip it, and two writers never share it.
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fs.open(tmp, 'wx', mode);
  try {
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
  } catch (e) {
    // A failed write (disk full, a name the target cannot take) leaves no temp file behind.
    await fs.rm(tmp, { force: true });
    throw e;
  }
  await syncDir(dir);
}

/** The parsed JSON content of `file`, or undefined when it does not exist. */
export async function readJsonFile<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file}: ${(e as Error).message}`, { cause: e });
  }
}
