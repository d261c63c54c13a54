// Hash routes (#/pipelines, #/runs/<id>?...): the server only ever serves index.html, and a reload
// or a shared link lands on the same page.
import { signal } from '@preact/signals';

export interface Route {
  /** Path segments after `#/`, decoded. */
  parts: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [path = '', qs = ''] = raw.split('?', 2);
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(qs) };
}

export const route = signal<Route>(parseHash(location.hash));
window.addEventListener('hashchange', () => (route.value = parseHash(location.hash)));

/** `#/a/b?x=1` from segments and a query. */
export function href(parts: string[], query: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
  const qs = q.toString();
  return `#/${parts.map(encodeURIComponent).join('/')}${qs ? `?${qs}` : ''}`;
}

export function navigate(to: string) {
  if (location.hash !== to) location.hash = to;
}
