// Console sessions: opaque random tokens kept in memory, so logout ends one at once. They live
// 8 hours (as the daemon's browser sessions) and do not survive a restart (log in again).
import { randomBytes } from 'node:crypto';

export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;

export interface Session {
  username: string;
  expiresAt: number;
}

export class Sessions {
  private readonly byToken = new Map<string, Session>();

  constructor(private readonly ttlMs = SESSION_TTL_MS) {}

  issue(username: string): { token: string; expiresAt: number } {
    this.sweep();
    const token = randomBytes(24).toString('base64url');
    const expiresAt = Date.now() + this.ttlMs;
    this.byToken.set(token, { username, expiresAt });
    return { token, expiresAt };
  }

  /** The session of a token, or undefined when unknown or expired. */
  check(token: string | undefined): Session | undefined {
    if (!token) return undefined;
    const s = this.byToken.get(token);
    if (!s) return undefined;
    if (s.expiresAt <= Date.now()) {
      this.byToken.delete(token);
      return undefined;
    }
    return s;
  }

  revoke(token: string): boolean {
    return this.byToken.delete(token);
  }

  /** Ends every session of a user (after a credential rotation). */
  revokeUser(username: string) {
    for (const [t, s] of this.byToken) if (s.username === username) this.byToken.delete(t);
  }

  private sweep() {
    const now = Date.now();
    for (const [t, s] of this.byToken) if (s.expiresAt <= now) this.byToken.delete(t);
  }
}
