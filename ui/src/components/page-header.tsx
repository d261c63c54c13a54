// The title row of a page, with its actions on the right.
import type { ComponentChildren } from 'preact';

export function PageHeader({ title, subtitle, children }: { title: ComponentChildren; subtitle?: ComponentChildren; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <div>
        <h1>{title}</h1>
        {subtitle && <p class="subtitle">{subtitle}</p>}
      </div>
      <div class="actions">{children}</div>
    </header>
  );
}
