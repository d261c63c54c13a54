// Stored password hashes (change-password); they override the SVC_AUTH_USERS bootstrap entry.
import type { Kysely } from 'kysely';
import type { Schema } from './schema.js';
import type { DbEngine, UserStore } from './types.js';
import { fits, MAX_NAME, nowIso } from './util.js';

export class SqlUserStore implements UserStore {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly engine: DbEngine,
  ) {}

  async passwordHash(username: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('users').select('password_hash').where('username', '=', username).executeTakeFirst();
    return r?.password_hash;
  }

  async setPasswordHash(username: string, hash: string): Promise<void> {
    const data = { password_hash: hash, updated_at: nowIso() };
    const q = this.db.insertInto('users').values({ username: fits(username, MAX_NAME, 'username'), ...data });
    await (this.engine === 'mysql' ? q.onDuplicateKeyUpdate(data) : q.onConflict((oc) => oc.column('username').doUpdateSet(data))).execute();
  }
}
