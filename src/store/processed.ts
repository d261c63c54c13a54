// Files (or objects) a pipeline has processed, for `skip_processed`.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from './schema.js';
import type { DbEngine, ProcessedStore } from './types.js';
import { fits, MAX_NAME, nowIso } from './util.js';

/** Remembers which input files a pipeline has handled (skip_processed): what a source is handed (plugins/types.ts). */
export interface ProcessedFiles {
  has(key: string): Promise<boolean>;
  add(key: string): Promise<void>;
}

/** Keys are unique by their sha256: a file key can be longer than an index entry allows. */
function keyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export class SqlProcessedStore implements ProcessedStore {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly engine: DbEngine,
  ) {}

  async has(pipeline: string, key: string): Promise<boolean> {
    const r = await this.db
      .selectFrom('processed_files')
      .select('file_key')
      .where('pipeline', '=', pipeline)
      .where('key_sha256', '=', keyHash(key))
      .executeTakeFirst();
    return r !== undefined;
  }

  /** Adding a key twice is harmless. */
  async add(pipeline: string, key: string): Promise<void> {
    const q = this.db
      .insertInto('processed_files')
      .values({ pipeline: fits(pipeline, MAX_NAME, 'pipeline'), key_sha256: keyHash(key), file_key: key, processed_at: nowIso() });
    await (this.engine === 'mysql'
      ? q.onDuplicateKeyUpdate({ key_sha256: (eb) => eb.ref('key_sha256') })
      : q.onConflict((oc) => oc.columns(['pipeline', 'key_sha256']).doNothing())
    ).execute();
  }

  async clear(pipeline: string): Promise<void> {
    await this.db.deleteFrom('processed_files').where('pipeline', '=', pipeline).execute();
  }
}

/** The engine's ProcessedFiles for one pipeline, backed by the database. */
export class DbProcessedFiles implements ProcessedFiles {
  constructor(
    private readonly store: ProcessedStore,
    readonly pipeline: string,
  ) {}

  has(key: string): Promise<boolean> {
    return this.store.has(this.pipeline, key);
  }

  add(key: string): Promise<void> {
    return this.store.add(this.pipeline, key);
  }
}
