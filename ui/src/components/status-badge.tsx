// A pipeline or run status as a coloured label; the colour follows the meaning, not the word.
const TONE: Record<string, string> = {
  running: 'info',
  scheduled: 'ok',
  success: 'ok',
  queued: 'info',
  stopped: 'muted',
  aborted: 'warn',
  failed: 'bad',
  error: 'bad',
};

export function StatusBadge({ status }: { status: string | null | undefined }) {
  const s = status ?? 'none';
  return <span class={`badge badge-${TONE[s] ?? 'muted'}`}>{s}</span>;
}
