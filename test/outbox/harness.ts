// Outbox test harness: a publisher that records what it was handed and can be told to fail,
// reject or hang per call; engines built through createBaton and stopped after each test;
// the outbox table emptied before each.

import { afterEach, beforeEach } from 'vitest';
import { type Baton, type BatonOptions, createBaton, PublishError, type Publisher, type PublishMessage } from '../../src/index.ts';
import type { TestDatabase } from '../helpers/db.ts';

export type Behaviour = 'ok' | 'retry' | 'reject' | 'hang';

/**
 * A publisher in this process: each call consults `decide`, then is recorded (acknowledged ones
 * separately). One instance may serve several relays: it then sees all their publishes, and
 * `maxInFlightPerKey` is the most calls of one ordering key that overlapped, across them all.
 */
export class RecordingPublisher implements Publisher {
  readonly calls: PublishMessage[] = [];
  readonly acked: PublishMessage[] = [];
  decide: (m: PublishMessage, call: number) => Behaviour = () => 'ok';
  /** How long an acknowledged publish takes: a slow destination (not a synchronisation). */
  latencyMs = 0;
  maxInFlightPerKey = 0;
  readonly #inFlight = new Map<string, number>();
  closed = false;

  async publish(m: PublishMessage, signal: AbortSignal): Promise<void> {
    const call = this.calls.push(m);
    const key = m.orderingKey === null ? null : `${m.tenantId}/${m.destination}/${m.orderingKey}`;
    if (key !== null) {
      const n = (this.#inFlight.get(key) ?? 0) + 1;
      this.#inFlight.set(key, n);
      this.maxInFlightPerKey = Math.max(this.maxInFlightPerKey, n);
    }
    try {
      const b = this.decide(m, call);
      if (b === 'retry') throw new PublishError('retry', `refused call ${call}`);
      if (b === 'reject') throw new PublishError('reject', `rejected call ${call}`);
      if (b === 'hang') {
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      }
      if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
      this.acked.push(m);
    } finally {
      if (key !== null) this.#inFlight.set(key, (this.#inFlight.get(key) ?? 1) - 1);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  ackedKeys(): string[] {
    return this.acked.map((m) => m.messageKey);
  }
}

export function useOutboxEngines(db: TestDatabase) {
  const engines: Baton[] = [];
  beforeEach(async () => {
    await db.query('TRUNCATE baton.outbox');
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop({ drainMs: 1_000 })));
  });
  const create = (options: BatonOptions = {}): Baton => {
    const baton = createBaton({ connectionString: db.url, poolSize: 3, ...options });
    engines.push(baton);
    return baton;
  };
  return {
    create,
    async start(options: BatonOptions = {}): Promise<Baton> {
      const b = create(options);
      await b.start();
      return b;
    },
  };
}

export async function outboxRow(db: TestDatabase, id: string): Promise<Record<string, any>> {
  const { rows } = await db.query('SELECT * FROM baton.outbox WHERE id = $1', [id]);
  return rows[0];
}

export async function outboxStates(db: TestDatabase): Promise<Record<string, number>> {
  const { rows } = await db.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM baton.outbox GROUP BY state');
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}
