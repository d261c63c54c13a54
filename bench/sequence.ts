// Reads back an NDJSON file of `{seq}` records written by a benchmark (ours or a peer tool's) and
// counts lines, sequence numbers missing and sequence numbers seen twice; streamed, never whole.
import { createReadStream } from 'node:fs';

export async function checkSequenceFile(file: string, n: number): Promise<{ lines: number; missing: number; duplicates: number }> {
  const seen = new Uint8Array(n);
  let lines = 0;
  let duplicates = 0;
  let rest = '';
  for await (const chunk of createReadStream(file, { encoding: 'utf8' }) as AsyncIterable<string>) {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const l of parts) {
      if (!l) continue;
      lines++;
      const seq = (JSON.parse(l) as { seq: number }).seq;
      if (seen[seq]) duplicates++;
      seen[seq] = 1;
    }
  }
  let missing = 0;
  for (let i = 0; i < n; i++) if (!seen[i]) missing++;
  return { lines, missing, duplicates };
}
