// One daemon per state (issue 17): `svc serve` locks its SQLite file and its state directory before
// it opens either, so a second daemon on the same one is refused at start instead of sharing the
// webhook spools and marking the first one's running runs as aborted.
//
// The lock is the operating system's: an fcntl lock, taken through SQLite's own locking on a small
// lock file (better-sqlite3 is here anyway; Node has no flock). The kernel drops it when the
// process ends, kill -9 included, so a crash never leaves a lock that blocks the next start, and a
// live daemon never loses it, however long its event loop stalls. (proper-lockfile's lock
// directories go stale by mtime instead: a restart right after kill -9 would wait out the stale
// period, and a daemon stalled longer than it would have its lock taken.)
//
// An fcntl lock goes with the first close() of any descriptor of its file in the holding process:
// nothing else may open a lock file. The holder's PID and host are in a text file beside it, read
// to name the holder in the refusal.
import { mkdirSync, readFileSync, realpathSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Settings } from '../settings.js';

export interface StateLock {
  /** The lock files held (none: nothing to lock). */
  readonly files: readonly string[];
  /** Releases the locks (idempotent); the process ending releases them as well. */
  release(): void;
}

/** Where the daemon keeps its durable state: SVC_STATE_DIR, else `state` beside the SQLite file. */
export function daemonStateDir(settings: Pick<Settings, 'STATE_DIR' | 'DB_PATH'>): string {
  return settings.STATE_DIR || join(dirname(settings.DB_PATH), 'state');
}

/**
 * Locks the SQLite file (SVC_DB_PATH, unless SVC_DB_URL names a server) and the state directory,
 * or throws a one-line error naming the path, the holder and what to do. A manager locks nothing:
 * its standbys share its database by design (the lease decides who leads), and the runs and their
 * spools are on the workers.
 */
export function lockDaemonState(settings: Settings, stateDir = daemonStateDir(settings)): StateLock {
  if (settings.MODE === 'manager') return { files: [], release() {} };
  const held: Held[] = [];
  try {
    if (!settings.DB_URL && settings.DB_PATH !== ':memory:') {
      const db = canonicalFile(settings.DB_PATH);
      held.push(acquire(`${db}.daemon`, `the SQLite database ${db} (SVC_DB_PATH)`, 'SVC_DB_PATH and SVC_STATE_DIR'));
    }
    const dir = canonicalDir(stateDir);
    const which = settings.STATE_DIR ? 'SVC_STATE_DIR' : 'SVC_STATE_DIR, by default beside SVC_DB_PATH';
    held.push(acquire(join(dir, 'daemon'), `the state directory ${dir} (${which})`, 'SVC_STATE_DIR'));
  } catch (e) {
    for (const h of held) h.release();
    throw e;
  }
  return { files: held.map((h) => h.file), release: () => held.forEach((h) => h.release()) };
}

interface Held {
  file: string;
  release(): void;
}

interface Holder {
  pid: number;
  host: string;
  since: string;
}

/** Takes `<base>.lock` and writes `<base>.pid`, or throws naming `what` and the holder. */
function acquire(base: string, what: string, own: string): Held {
  const file = `${base}.lock`;
  const holderFile = `${base}.pid`;
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { timeout: 0 });
    // EXCLUSIVE locking mode keeps the lock after the transaction, until close() or the process ends;
    // the journal in memory leaves no second file beside the lock.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (e) {
    db?.close();
    if ((e as { code?: string }).code === 'SQLITE_BUSY') {
      const h = readHolder(holderFile);
      const who = h ? `PID ${h.pid} on ${h.host}, running since ${h.since}` : `PID unknown: ${holderFile} is missing`;
      throw new Error(`${what} is in use by another svc daemon (${who}; lock ${file}): stop that daemon first, or give this one its own ${own}`, { cause: e });
    }
    throw new Error(`cannot lock ${what}: ${file}: ${(e as Error).message}`, { cause: e });
  }
  const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  writeFileSync(holderFile, JSON.stringify(holder) + '\n');
  let open = true;
  return {
    file,
    release() {
      if (!open) return;
      open = false;
      // The holder file first: once the lock is released, the next holder may already have written its own.
      try {
        unlinkSync(holderFile);
      } catch {
        /* already gone */
      }
      db.close();
    },
  };
}

function readHolder(file: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8')) as Holder;
    return typeof h.pid === 'number' ? h : undefined;
  } catch {
    return undefined;
  }
}

/** The directory, created, with symlinks resolved: two spellings of one place are one lock. */
function canonicalDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return realpathSync(dir);
}

/** The file's path with symlinks resolved (its directory created, as openStore would). */
function canonicalFile(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return join(canonicalDir(dirname(resolve(file))), basename(file));
  }
}
