// LeaderStore on node-postgres: the lease's statements on the engine's pool, and the fenced
// transaction the cron ticker writes in (its fence held from the first statement to COMMIT).

import type { Fenced, LeaderAcquireParams, LeaderStore } from '../../driver/leader-store.ts';
import { isBatonError } from '../../types/errors.ts';
import { translatePgError } from './errors.ts';
import { checkOut, type PgPoolLike, type Queryable } from './pool.ts';
import { type LeaderQueries, leaderQueries } from './queries/leader.ts';
import { queryRows } from './query-rows.ts';

export class PgLeaderStore implements LeaderStore {
  readonly #pool: PgPoolLike;
  readonly #q: LeaderQueries;

  /** `quotedSchema` must already be quoted (see quoteSchema). */
  constructor(pool: PgPoolLike, quotedSchema: string) {
    this.#pool = pool;
    this.#q = leaderQueries(quotedSchema);
  }

  async leaderAcquire(p: LeaderAcquireParams): Promise<string | null> {
    const rows = await queryRows<{ epoch: string }>(this.#pool, this.#q.acquire, [
      p.holder,
      p.leaseMs,
      p.lockKey,
      p.lockNamespace,
      p.lastEpoch,
    ]);
    return rows[0]?.epoch ?? null;
  }

  async leaderRenew(p: { holder: string; epoch: string; leaseMs: number; lockKey: number | null }): Promise<boolean> {
    const rows = await queryRows(this.#pool, this.#q.renew, [p.holder, p.leaseMs, p.epoch, p.lockKey]);
    return rows.length === 1;
  }

  async leaderRelease(p: { holder: string; epoch: string }): Promise<void> {
    await queryRows(this.#pool, this.#q.release, [p.holder, p.epoch]);
  }

  async leaderCurrent() {
    const rows = await queryRows<{ holder: string; epoch: string; acquired_at: Date; expires_at: Date }>(this.#pool, this.#q.current, []);
    const r = rows[0];
    return r ? { holder: r.holder, epoch: r.epoch, acquiredAt: r.acquired_at, expiresAt: r.expires_at } : null;
  }

  async leaderFenced<T>(
    p: { epoch: string; idleMs: number; stillLeader: () => boolean },
    fn: (client: Queryable) => Promise<T>,
  ): Promise<Fenced<T>> {
    const out = await checkOut(this.#pool).catch((err: unknown) => {
      throw translatePgError(err);
    });
    let broken = false;
    try {
      await queryRows(out.client, { text: 'BEGIN' }, []);
      try {
        const [fence] = await queryRows<{ held: boolean }>(out.client, this.#q.fenceTx, [p.epoch, Math.max(1, Math.round(p.idleMs))]);
        let result: Fenced<T> = { held: false };
        if (fence?.held) {
          const value = await fn(out.client);
          // The local deadline passed while we wrote (a stall): give it all up rather than commit late.
          if (p.stillLeader()) result = { held: true, value };
        }
        await queryRows(out.client, { text: result.held ? 'COMMIT' : 'ROLLBACK' }, []);
        return result;
      } catch (err) {
        await out.client.query({ text: 'ROLLBACK' }).catch(() => {
          broken = true;
        });
        throw err;
      }
    } catch (err) {
      broken ||= isBatonError(err) && err.code === 'DB_UNAVAILABLE';
      throw err;
    } finally {
      out.release(broken);
    }
  }
}
