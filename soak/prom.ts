// Reads the Prometheus text exposition of the daemon's /metrics: just what the soak samples.

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample line (`name{a="b"} 1.5`), comments and blank lines skipped. */
export function parseProm(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, '$1');
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one series `name` (without labels), or NaN. */
export const scalar = (s: Series[], name: string): number => s.find((x) => x.name === name)?.value ?? NaN;

/** Values of `name` by one label's value, summed over the other labels. */
export function byLabel(s: Series[], name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of s) if (x.name === name) out[x.labels[label] ?? ''] = (out[x.labels[label] ?? ''] ?? 0) + x.value;
  return out;
}
