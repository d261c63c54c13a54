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

/** `tone` overrides the status's own colour (a success with dead letters is amber: components/run-status.tsx). */
export function StatusBadge({ status, tone, title }: { status: string | null | undefined; tone?: string; title?: string }) {
  const s = status ?? 'none';
  return (
    <span class={`badge badge-${tone ?? TONE[s] ?? 'muted'}`} title={title}>
      {s}
    </span>
  );
}
