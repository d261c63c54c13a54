// The running state of the simulator or the trap receiver.
const TONE: Record<string, string> = { running: 'ok', starting: 'info', stopping: 'info', stopped: 'muted', error: 'bad' };

export function ServiceBadge({ state }: { state: string | undefined }) {
  return <span class={`badge badge-${TONE[state ?? ''] ?? 'muted'}`}>{state ?? '…'}</span>;
}
