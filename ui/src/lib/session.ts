// Who the UI talks to and with which credential. Tokens live in sessionStorage only (gone when the
// tab closes, never in localStorage or cookies): a bearer token or API key on the daemon,
// X-Auth-Token on the console.
import { signal } from '@preact/signals';

/** The server that served this page: the pipeline daemon or the SNMP operator console. */
export type ServerKind = 'daemon' | 'console';

export interface Credential {
  /** `token`: a session token from a login; `key`: an API key pasted by the operator (daemon only). */
  kind: 'token' | 'key';
  value: string;
  username?: string;
}

const STORAGE_KEY = 'svc.credential';

function load(): Credential | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    return raw ? (JSON.parse(raw) as Credential) : null;
  } catch {
    return null;
  }
}

export const credential = signal<Credential | null>(load());
export const serverKind = signal<ServerKind>('daemon');
/** Set when the server answered 401: the login form is shown instead of the page. */
export const loginRequired = signal(false);

export function setCredential(c: Credential | null) {
  credential.value = c;
  if (c) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(c));
  else sessionStorage.removeItem(STORAGE_KEY);
  loginRequired.value = false;
}

/** The headers that carry the credential to the server that served the page. */
export function authHeaders(): Record<string, string> {
  const c = credential.value;
  if (!c) return {};
  if (serverKind.value === 'console') return { 'x-auth-token': c.value };
  return c.kind === 'key' ? { 'x-api-key': c.value } : { authorization: `Bearer ${c.value}` };
}
