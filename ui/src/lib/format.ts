// How numbers, times and durations read on every page.

export function fmtInt(n: number | null | undefined): string {
  return n === null || n === undefined ? '–' : n.toLocaleString('en-US');
}

export function fmtPercent(x: number | null | undefined): string {
  if (x === null || x === undefined) return '–';
  return `${(x * 100).toFixed(x > 0 && x < 0.001 ? 3 : 1)}%`;
}

/** Local date and time to the second, e.g. 2024-05-01 14:03:07. */
export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** just now, 12 s ago, 5 min ago, 3 h ago, 2 d ago (or "in ..." for the future). */
export function fmtAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  const a = Math.abs(s);
  if (a < 5) return 'just now';
  const span = a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 86400 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
  return s < 0 ? `in ${span}` : `${span} ago`;
}

export function fmtSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || Number.isNaN(s)) return '–';
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** Seconds between two ISO timestamps, or null while the second is missing. */
export function durationSeconds(from: string, to: string | null): number | null {
  if (!to) return null;
  return (new Date(to).getTime() - new Date(from).getTime()) / 1000;
}

/** A rate in records per second: 2.5/s, 1,234/s. */
export function fmtRate(n: number | null | undefined): string {
  if (n === null || n === undefined || Number.isNaN(n)) return '–';
  return `${n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US')}/s`;
}
