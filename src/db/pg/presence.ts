// Presence: a dedicated connection holding a session-level advisory lock for as
// long as this worker process lives. When the session ends (kill -9, network
// loss), PostgreSQL drops the lock, which lets any reaper prove the owner is gone.
// After a reconnect the lock and the worker row are re-acquired; until then `held` is
// false and the engine claims nothing.
// Leader election rides on the same session: an eligible process tries a second advisory
// lock, the database's one leader lock, now and every leaderRetryMs while it does not hold
// it. The session's end frees it, and another process takes it within about leaderRetryMs.
// Nothing depends on it for correctness: the leader only runs maintenance that is safe twice.

import os from 'node:os';
import pg from 'pg';
import type { Presence } from '../executor.ts';
import { endClient } from './end-client.ts';
import { translatePgError } from './errors.ts';
import { workerQueries, type WorkerQueries } from './queries/worker.ts';

export interface PgPresenceOptions {
  connection: pg.ClientConfig;
  quotedSchema: string;
  lockNamespace: number;
  workerId: string;
  queues: Record<string, number>;
  /** Job types this process has handlers for. */
  jobTypes: string[];
  retryMs?: number;
  onError?: (err: unknown) => void;
  /** Runs each time the lock is acquired, the first time and after every reconnect. */
  onAcquired?: () => void;
  /** The leader lock (a namespace and key no presence lock uses); absent: this process never leads. */
  leaderLock?: { namespace: number; key: number };
  /** How often a process that does not lead tries the leader lock. Default LEADER_RETRY_MS_DEFAULT. */
  leaderRetryMs?: number;
  /** Runs when this process becomes the leader (true) and when it stops being it (false). */
  onLeadership?: (leader: boolean) => void;
}

/**
 * A dead leader's leases wait for the next one (fast reclaim is its sweep): a try is one
 * pg_try_advisory_lock on the idle presence session, cheap enough to make often.
 */
export const LEADER_RETRY_MS_DEFAULT = 250;

export class PgPresence implements Presence {
  readonly #o: PgPresenceOptions;
  readonly #q: WorkerQueries;
  #client: pg.Client | null = null;
  #key: number | null = null;
  #stopped = false;
  #retry: NodeJS.Timeout | null = null;
  #leader = false;
  #leaderTimer: NodeJS.Timeout | null = null;
  #tryingLeader = false;

  constructor(options: PgPresenceOptions) {
    this.#o = options;
    this.#q = workerQueries(options.quotedSchema);
  }

  /** Lost the moment the connection reports an error or its end; the engine claims only while held. */
  get held(): boolean {
    return this.#client !== null;
  }

  get leader(): boolean {
    return this.#leader;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    // Surface an unreachable database as DB_UNAVAILABLE, not a raw socket error.
    await this.#acquire().catch((err) => {
      throw translatePgError(err);
    });
  }

  async #acquire(): Promise<void> {
    const client = new pg.Client({ ...this.#o.connection, keepAlive: true, application_name: 'baton-presence' });
    client.on('error', (err) => this.#lost(client, err));
    client.on('end', () => this.#lost(client, new Error('presence connection ended')));
    try {
      await client.connect();
      // Keep the key across reconnects when we can, so the worker row stays stable.
      for (let i = 0; i < 10; i++) {
        if (this.#key === null) {
          const r = await client.query<{ key: number }>(this.#q.nextLockKey);
          this.#key = r.rows[0]!.key;
        }
        const got = await client.query<{ ok: boolean }>({ ...this.#q.tryLock, values: [this.#o.lockNamespace, this.#key] });
        if (got.rows[0]?.ok) break;
        this.#key = null;
      }
      if (this.#key === null) throw new Error('could not acquire a presence lock');
      await client.query({
        ...this.#q.upsert,
        values: [this.#o.workerId, this.#key, os.hostname(), process.pid, JSON.stringify(this.#o.queues), this.#o.jobTypes],
      });
      if (this.#stopped) {
        // stop() ran while we connected: this session ends now, so leave no worker row behind.
        await client.query({ ...this.#q.remove, values: [this.#o.workerId] }).catch(() => undefined);
        await endClient(client);
        return;
      }
      this.#client = client;
      this.#o.onAcquired?.();
      this.#startLeaderAttempts();
    } catch (err) {
      await endClient(client);
      throw err;
    }
  }

  #lost(client: pg.Client, err: unknown): void {
    if (this.#client !== client || this.#stopped) return;
    this.#client = null;
    this.#setLeader(false);
    this.#o.onError?.(err);
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    if (this.#stopped || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.#acquire().catch((err) => {
        this.#o.onError?.(err);
        this.#scheduleRetry();
      });
    }, this.#o.retryMs ?? 500);
  }

  /** Tries the leader lock now and then every leaderRetryMs while not leading (no-op when not eligible). */
  #startLeaderAttempts(): void {
    if (!this.#o.leaderLock || this.#leaderTimer) return;
    void this.#tryLeader();
    this.#leaderTimer = setInterval(() => void this.#tryLeader(), this.#o.leaderRetryMs ?? LEADER_RETRY_MS_DEFAULT);
  }

  async #tryLeader(): Promise<void> {
    const client = this.#client;
    const lock = this.#o.leaderLock;
    if (!client || !lock || this.#leader || this.#tryingLeader || this.#stopped) return;
    this.#tryingLeader = true;
    try {
      const got = await client.query<{ ok: boolean }>({ ...this.#q.tryLock, values: [lock.namespace, lock.key] });
      if (!got.rows[0]?.ok || this.#client !== client) return;
      await client.query({ ...this.#q.markLeader, values: [this.#o.workerId] });
      if (this.#client === client && !this.#stopped) this.#setLeader(true);
    } catch (err) {
      // The session failing is handled by #lost; anything else is retried on the next tick.
      this.#o.onError?.(err);
    } finally {
      this.#tryingLeader = false;
    }
  }

  #setLeader(leader: boolean): void {
    if (this.#leader === leader) return;
    this.#leader = leader;
    this.#o.onLeadership?.(leader);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
    if (this.#leaderTimer) clearInterval(this.#leaderTimer);
    this.#leaderTimer = null;
    this.#setLeader(false);
    const client = this.#client;
    this.#client = null;
    if (!client) return;
    try {
      await client.query({ ...this.#q.remove, values: [this.#o.workerId] });
    } catch {
      // The row is pruned later; the lock goes with the session anyway.
    }
    await endClient(client);
  }
}
