// One line that tells the operator what happened: an error from the server ({detail}) or a result.
import type { ComponentChildren } from 'preact';

export function Notice({ tone, children, onClose }: { tone: 'error' | 'ok' | 'info'; children: ComponentChildren; onClose?: () => void }) {
  return (
    <div class={`notice notice-${tone}`} role={tone === 'error' ? 'alert' : 'status'}>
      <span>{children}</span>
      {onClose && (
        <button type="button" class="link" aria-label="dismiss" onClick={onClose}>
          ×
        </button>
      )}
    </div>
  );
}
