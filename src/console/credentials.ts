// Console users (spec doc 1 section 5). Seeded from SVC_AUTH_USERS; with none, a random first-run
// password for `admin` is generated, logged once and stored hashed: there is never a fixed default.
// Rotations are stored hashed too (scrypt), in the console state directory.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from '../observability/log.js';
import { hashPassword, parseAuthUsers, verifyPassword } from '../auth/passwords.js';
import { readJsonFile, writeFileDurably } from '../util/durable.js';
import { httpError } from '../core/http-errors.js';

interface Stored {
  /** username -> scrypt hash */
  users: Record<string, string>;
}

export const MIN_PASSWORD_LENGTH = 8;

export class ConsoleCredentials {
  private users = new Map<string, string>();
  private readonly file: string;

  private constructor(dir: string) {
    this.file = join(dir, 'credentials.json');
  }

  /**
   * Stored users win (they may have been rotated); SVC_AUTH_USERS seeds users not stored yet; with
   * neither, `admin` gets a random password printed once in the log.
   */
  static async open(dir: string, authUsers: readonly string[], log: Logger): Promise<ConsoleCredentials> {
    const c = new ConsoleCredentials(dir);
    const stored = await readJsonFile<Stored>(c.file);
    for (const [u, h] of Object.entries(stored?.users ?? {})) c.users.set(u, h);
    const seeds = parseAuthUsers(authUsers);
    for (const w of seeds.warnings) log.warn(w);
    let changed = false;
    for (const [u, p] of seeds.users) {
      if (c.users.has(u)) continue;
      c.users.set(u, await hashPassword(p));
      changed = true;
    }
    if (c.users.size === 0) {
      const password = randomBytes(12).toString('base64url');
      c.users.set('admin', await hashPassword(password));
      changed = true;
      log.warn({ username: 'admin', password, stored_in: c.file }, 'console first-run password generated (shown once; rotate it with POST /api/settings/auth)');
    }
    if (changed) await c.save();
    return c;
  }

  async verify(username: string, password: string): Promise<boolean> {
    const h = this.users.get(username);
    // Unknown users cost a hash too, so timing does not tell which names exist.
    if (h === undefined) {
      await hashPassword(password);
      return false;
    }
    return verifyPassword(password, h);
  }

  /** Changes a user's password (and optionally name) after checking the current password. */
  async rotate(username: string, current: string, next: string, newUsername?: string): Promise<string> {
    if (!(await this.verify(username, current))) throw httpError('HTTP_PASSWORD_WRONG', 'current password is wrong');
    if (next.length < MIN_PASSWORD_LENGTH) throw httpError('HTTP_PASSWORD_CHANGE_INVALID', `new password must be at least ${MIN_PASSWORD_LENGTH} characters`);
    const name = newUsername?.trim() || username;
    if (name !== username && this.users.has(name)) throw httpError('HTTP_USER_EXISTS', name);
    const hash = await hashPassword(next);
    this.users.delete(username);
    this.users.set(name, hash);
    await this.save();
    return name;
  }

  private save(): Promise<void> {
    return writeFileDurably(this.file, JSON.stringify({ users: Object.fromEntries(this.users) } satisfies Stored, null, 2));
  }
}
