// Outbox retention: the elected leader deletes published messages and dead letters past their
// retention, whether or not it runs a relay (a fleet's leader may have no publishers). Each
// delete is a leader-only write fenced by the lease's epoch, in batches with SKIP LOCKED.

import type { OutboxStore } from '../../driver/outbox-store.ts';
import { Periodic } from '../periodic.ts';
import type { Service } from '../service.ts';
import { OUTBOX_PURGE_BATCH_DEFAULT, type RelayConfig } from './config.ts';

export interface OutboxRetentionDeps {
  store: OutboxStore;
  config: Pick<RelayConfig, 'retention' | 'retentionIntervalMs'>;
  /** The leader lease's epoch while this process leads, else null. */
  leaderEpoch: () => string | null;
  onPurged: (state: 'published' | 'dead_lettered', count: number) => void;
  onError: (err: unknown) => void;
}

export class OutboxRetention implements Service {
  readonly name = 'outbox retention';
  readonly #d: OutboxRetentionDeps;
  readonly #periodic: Periodic;
  /** Set by stop: a sweep under way purges no further state. */
  #stopped = false;

  constructor(deps: OutboxRetentionDeps) {
    this.#d = deps;
    this.#periodic = new Periodic(this.name, {
      intervalMs: deps.config.retentionIntervalMs,
      task: () => this.sweep(),
      onError: deps.onError,
    });
  }

  /** Sweeps at once, then every retentionIntervalMs; started again on each new leadership after a stop. */
  start(): void {
    const { retention } = this.#d.config;
    if (retention.publishedMs === null && retention.deadLetteredMs === null) return;
    this.#stopped = false;
    this.#periodic.start();
  }

  stop(): Promise<void> {
    this.#stopped = true;
    return this.#periodic.stop();
  }

  /** One batch per state, while this process leads; exposed for tests. */
  async sweep(): Promise<void> {
    const { retention } = this.#d.config;
    const ages: Array<['published' | 'dead_lettered', number | null]> = [
      ['published', retention.publishedMs],
      ['dead_lettered', retention.deadLetteredMs],
    ];
    for (const [state, olderThanMs] of ages) {
      const epoch = this.#d.leaderEpoch();
      if (olderThanMs === null || epoch === null || this.#stopped) continue;
      const count = await this.#d.store.outboxPurge({ state, olderThanMs, limit: OUTBOX_PURGE_BATCH_DEFAULT, epoch });
      if (count > 0) this.#d.onPurged(state, count);
    }
  }
}
