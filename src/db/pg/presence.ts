// Presence: a dedicated connection holding a session-level advisory lock for as
// long as this worker process lives. When the session ends (kill -9, network
// loss), PostgreSQL drops the lock, which lets any reaper prove the owner is gone.
// After a reconnect the lock and the worker row are re-acquired; until then `held` is
// false and the engine claims nothing. The leader lease (core/leader-lease.ts) records the
// holder's key, so that a dead holder's lease can be taken at once.

import os from 'node:os';
import type pg from 'pg';
import type { Presence } from '../../driver/executor.ts';
import { endClient } from './end-client.ts';
import { translatePgError } from './errors.ts';
import { newClient } from './multi-host.ts';
import { type WorkerQueries, workerQueries } from './queries/worker.ts';

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
}

export class PgPresence implements Presence {
  readonly #o: PgPresenceOptions;
  readonly #q: WorkerQueries;
  #client: pg.Client | null = null;
  #key: number | null = null;
  #stopped = false;
  #retry: NodeJS.Timeout | null = null;

  constructor(options: PgPresenceOptions) {
    this.#o = options;
    this.#q = workerQueries(options.quotedSchema);
  }

  /** Lost the moment the connection reports an error or its end; the engine claims only while held. */
  get held(): boolean {
    return this.#client !== null;
  }

  get lockKey(): number | null {
    return this.#client ? this.#key : null;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    // Surface an unreachable database as DB_UNAVAILABLE, not a raw socket error.
    await this.#acquire().catch((err) => {
      throw translatePgError(err);
    });
  }

  async #acquire(): Promise<void> {
    const client = newClient({ ...this.#o.connection, keepAlive: true, application_name: 'baton-presence' });
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
    } catch (err) {
      await endClient(client);
      throw err;
    }
  }

  #lost(client: pg.Client, err: unknown): void {
    if (this.#client !== client || this.#stopped) return;
    this.#client = null;
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

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
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
