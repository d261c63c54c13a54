import fs from 'node:fs/promises';

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
