// Small helpers shared by the repositories: canonical timestamps, driver-neutral numbers,
// unique-violation detection and a per-key mutex.

/** Canonical ISO 8601 UTC (`2024-05-01T12:00:00.000Z`); throws on an unparseable value. */
export function iso(value: string, what = 'timestamp'): string {
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new Error(`invalid ${what}: ${JSON.stringify(value)} is not an ISO 8601 date`);
  return new Date(t).toISOString();
}

/** Column widths of the key columns (varchar on PostgreSQL and MySQL; SQLite would not enforce them). */
export const MAX_NAME = 255;
export const MAX_RUN_ID = 128;

/** Rejects a value that would not fit its column, the same way on every engine. */
export function fits(value: string, max: number, what: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new Error(`${what} must be a non-empty string`);
  if (value.length > max) throw new Error(`${what} is longer than ${max} characters`);
  return value;
}

export function nowIso(): string {
  return new Date().toISOString();
}

/** pg returns BIGINT and aggregates as strings, mysql2 returns DECIMAL sums as strings. */
export function num(v: unknown): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  const n = Number(v);
  if (Number.isNaN(n)) throw new Error(`store: expected a number, got ${JSON.stringify(v)}`);
  return n;
}

/** True for a unique or primary-key violation on SQLite, PostgreSQL or MySQL/MariaDB. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errno?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  return (
    e.code === '23505' || e.code === 'ER_DUP_ENTRY' || e.errno === 1062 || e.code === 'SQLITE_CONSTRAINT_UNIQUE' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/** A transaction lost a race and may simply be run again: unique violation, deadlock, serialization failure, busy. */
export function isRetryableConflict(err: unknown): boolean {
  if (isUniqueViolation(err)) return true;
  const e = err as { code?: unknown; errno?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  return (
    e.code === '40001' || // serialization_failure
    e.code === '40P01' || // deadlock_detected
    e.code === 'ER_LOCK_DEADLOCK' ||
    e.errno === 1213 ||
    e.code === 'SQLITE_BUSY'
  );
}

/** Serializes async work per key inside this process (e.g. saves of one pipeline). */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}
