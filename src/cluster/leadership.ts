// Manager high availability on PostgreSQL: several managers, one leader, elected by a lease row
// (`manager_lease`) with an epoch, timed by the database's clock. The leader renews about every
// TTL/5 (3 s of 15 s); a manager that finds the lease expired takes it with the next epoch. A
// leader that cannot renew steps down by its own monotonic clock before the lease can have passed
// to another (it counts from the moment it sent its last successful renewal), so two leaders never
// act at once; the epoch travels with every /agent/* call and workers refuse a lower one, which
// covers a leader frozen (SIGSTOP, a long GC pause) past its lease that wakes and calls before it
// notices. SQLite and MariaDB have no lease: one manager, always the leader, epoch 0.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../observability/log.js';
import { dbNow } from '../store/clock.js';
import type { Schema } from '../store/schema.js';
import type { DbEngine } from '../store/types.js';

const LEASE = 'leader';
/** Margin for the renewal's own latency: a leader steps down this long before its lease could expire. */
const STEP_DOWN_MARGIN_MS = 1000;

export interface LeaderInfo {
  holder: string;
  epoch: number;
  expires_at: string;
}

export class Leadership {
  /** This manager's name in the lease: its node id plus a random suffix (two processes never share it). */
  readonly holder: string;
  private leaderEpoch = -1;
  /** performance.now() when the last successful renewal was sent; the lease is ours until + TTL - margin. */
  private validUntilMono = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private current?: LeaderInfo;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly opts: {
      db: Kysely<Schema>;
      engine: DbEngine;
      nodeId?: string;
      ttlMs: number;
      log: Logger;
      /** Called once when this leader loses the lease (steps down). */
      onLost(reason: string): void;
    },
  ) {
    this.holder = `${opts.nodeId ?? hostname()}/${randomBytes(4).toString('hex')}`;
  }

  /** Leases exist on PostgreSQL only; elsewhere one manager is always the leader. */
  get elected(): boolean {
    return this.opts.engine === 'postgresql';
  }

  /** Leader now, by this process's monotonic clock (false once the lease may have passed on). */
  isLeader(): boolean {
    if (!this.elected) return true;
    return this.leaderEpoch >= 0 && performance.now() < this.validUntilMono;
  }

  /** The epoch to send with /agent/* calls; throws when this manager is not the leader now. */
  epoch(): number {
    if (!this.elected) return 0;
    if (!this.isLeader()) throw new Error('this manager is not the leader (its lease may have passed to another manager)');
    return this.leaderEpoch;
  }

  /** The lease as last read: who leads, with which epoch. */
  info(): LeaderInfo | undefined {
    return this.current;
  }

  /** Starts trying (and renewing); resolves once this manager leads. */
  start(): Promise<void> {
    if (!this.elected) return Promise.resolve();
    const led = new Promise<void>((r) => this.waiters.push(r));
    void this.tick();
    return led;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async tick() {
    if (this.stopped) return;
    const wasLeader = this.leaderEpoch >= 0;
    // A leader that did not renew in time steps down first, whatever the database says next.
    if (wasLeader && !this.isLeader()) return this.lose('the lease was not renewed in time');
    const sentAt = performance.now();
    try {
      const r = await this.tryAcquire();
      this.current = r.info;
      if (r.mine) {
        // Our lease, from when the request was sent: the database's expiry is later than this.
        if (wasLeader && r.info.epoch !== this.leaderEpoch) return this.lose(`the lease moved to epoch ${r.info.epoch}`);
        this.validUntilMono = sentAt + this.opts.ttlMs - STEP_DOWN_MARGIN_MS;
        if (!wasLeader) {
          this.leaderEpoch = r.info.epoch;
          this.opts.log.info({ holder: this.holder, epoch: r.info.epoch }, 'this manager is the leader');
          for (const w of this.waiters.splice(0)) w();
        }
      } else if (wasLeader) {
        return this.lose(`${r.info.holder} holds the lease (epoch ${r.info.epoch})`);
      }
    } catch (e) {
      this.opts.log.warn({ err: errorMessage(e) }, wasLeader ? 'lease not renewed (retrying until it runs out)' : 'lease not read');
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), Math.max(200, Math.floor(this.opts.ttlMs / 5)));
    this.timer.unref();
  }

  private lose(reason: string) {
    this.leaderEpoch = -1;
    this.validUntilMono = 0;
    this.stop();
    this.opts.log.error({ holder: this.holder, reason }, 'this manager is no longer the leader: stepping down');
    this.opts.onLost(reason);
  }

  /** One round trip: take the lease if it is free or expired, renew it if ours; report who holds it. */
  private async tryAcquire(): Promise<{ mine: boolean; info: LeaderInfo }> {
    const { db, engine, ttlMs } = this.opts;
    return db.transaction().execute(async (trx) => {
      const now = await dbNow(trx, engine);
      const expires = new Date(now.getTime() + ttlMs).toISOString();
      const row = await trx.selectFrom('manager_lease').selectAll().where('name', '=', LEASE).forUpdate().executeTakeFirst();
      if (!row) {
        const inserted = await trx
          .insertInto('manager_lease')
          .values({ name: LEASE, holder: this.holder, epoch: 1, expires_at: expires, renewed_at: now.toISOString() })
          .onConflict((oc) => oc.column('name').doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return { mine: true, info: { holder: this.holder, epoch: 1, expires_at: expires } };
        const other = await trx.selectFrom('manager_lease').selectAll().where('name', '=', LEASE).executeTakeFirstOrThrow();
        return { mine: false, info: { holder: other.holder, epoch: Number(other.epoch), expires_at: other.expires_at } };
      }
      const epoch = Number(row.epoch);
      if (row.holder === this.holder && row.expires_at > now.toISOString()) {
        await trx.updateTable('manager_lease').set({ expires_at: expires, renewed_at: now.toISOString() }).where('name', '=', LEASE).execute();
        return { mine: true, info: { holder: this.holder, epoch, expires_at: expires } };
      }
      if (row.expires_at <= now.toISOString()) {
        // Expired (its holder stopped renewing, or it is ours and ran out): the next epoch.
        await trx
          .updateTable('manager_lease')
          .set({ holder: this.holder, epoch: epoch + 1, expires_at: expires, renewed_at: now.toISOString() })
          .where('name', '=', LEASE)
          .execute();
        return { mine: true, info: { holder: this.holder, epoch: epoch + 1, expires_at: expires } };
      }
      return { mine: false, info: { holder: row.holder, epoch, expires_at: row.expires_at } };
    });
  }
}
