// Shown when the server answered 401: a login (session token kept in sessionStorage) or, on the
// daemon, an API key pasted for this tab only.
import { useState } from 'preact/hooks';
import { Notice } from '../components/notice.js';
import { request } from '../lib/http.js';
import { serverKind, setCredential } from '../lib/session.js';

export function LoginPage() {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [apiKey, setApiKey] = useState('');
  const [error, setError] = useState<string>();
  const onConsole = serverKind.value === 'console';

  const login = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const r = await request<{ token: string; username: string }>(onConsole ? '/api/settings/login' : '/api/auth/login', {
        method: 'POST',
        json: { username, password },
      });
      setCredential({ kind: 'token', value: r.token, username: r.username });
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const useKey = (e: Event) => {
    e.preventDefault();
    if (apiKey) setCredential({ kind: 'key', value: apiKey });
  };

  return (
    <div class="login">
      <h1>svc {onConsole ? 'operator console' : 'pipelines'}</h1>
      <p class="subtitle">This server needs you to sign in.</p>
      {error && <Notice tone="error">{error}</Notice>}
      <form onSubmit={login} class="stack">
        <label>
          User name
          <input name="username" autocomplete="username" value={username} onInput={(e) => setUsername(e.currentTarget.value)} required />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            required
          />
        </label>
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
      {onConsole && (
        <p class="muted small" data-testid="first-run-hint">
          First run: when <code>SVC_AUTH_USERS</code> is not set, the console makes the user <code>admin</code> with a random password and prints it once in the
          log of <code>svc serve</code> (or <code>svc console</code>): the WARNING line <q>console first-run password generated</q>, with <code>username</code>{' '}
          and <code>password</code>. Lost it? Stop svc, delete <code>console/credentials.json</code> in the state folder (<code>SVC_STATE_DIR</code>, or{' '}
          <code>state</code> beside the database) and start it again: a new password is printed. Rotate it with <code>POST /api/settings/auth</code>.
        </p>
      )}
      {!onConsole && (
        <form onSubmit={useKey} class="stack">
          <label>
            Or an API key (SVC_API_KEY), kept for this tab only
            <input name="api-key" type="password" autocomplete="off" value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} />
          </label>
          <button type="submit">Use key</button>
        </form>
      )}
    </div>
  );
}
