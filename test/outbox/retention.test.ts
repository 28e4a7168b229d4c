// Outbox retention runs on the leader, whether or not it runs a relay (a fleet's leader may have
// no publishers), and each purge is fenced by the leader lease's epoch: under an epoch that lost
// the lease it deletes nothing.

import { describe, expect, it } from 'vitest';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { Signal, waitFor } from '../helpers/wait.ts';
import { useOutboxEngines } from './harness.ts';

const db = useTestDatabase();

/** A finished message, `ageMs` old. */
async function finished(state: 'published' | 'dead_lettered', key: string, ageMs = 60_000): Promise<void> {
  await db.query(
    `INSERT INTO baton.outbox (destination, topic, message_key, state, max_attempts, finished_at)
     VALUES ('d', 't', $1, $2, 3, now() - make_interval(secs => $3::double precision / 1000.0))`,
    [key, state, ageMs],
  );
}
const left = async () =>
  (await db.query<{ key: string }>('SELECT message_key AS key FROM baton.outbox ORDER BY id')).rows.map((r) => r.key);

describe('outbox retention', () => {
  const engines = useOutboxEngines(db);

  it('the leader deletes finished messages past their retention, with no publisher and no relay of its own', async () => {
    await finished('published', 'p-old');
    await finished('dead_lettered', 'd-old');
    await finished('published', 'p-young', 0);
    const baton = engines.create({
      leaderLeaseMs: 1_000,
      outbox: { retention: { publishedMs: 30_000, deadLetteredMs: 30_000 }, retentionIntervalMs: 50 },
    });
    const purged = new Signal<{ state: string; count: number }>();
    baton.outbox.events.on('purged', (e) => purged.emit(e));
    await baton.start();
    await waitFor(() => baton.stats().leader, { message: 'the engine to lead' });
    await waitFor(async () => (await left()).join() === 'p-young', { message: 'the old messages to be purged' });
    const seen = [await purged.next({ message: 'a purged event' }), await purged.next({ message: 'another purged event' })];
    expect(seen.map((e) => e.state).sort()).toEqual(['dead_lettered', 'published']);
  });

  it('a purge under an epoch that lost the lease, or whose lease expired, deletes nothing', async () => {
    await finished('published', 'p');
    const store = new PgOutboxStore(db.pool, quoteSchema('baton'));
    const deposed = await takeLeaderLease(db.pool, { holder: 'a' });
    const current = await takeLeaderLease(db.pool, { holder: 'b' });
    expect(await store.outboxPurge({ state: 'published', olderThanMs: 0, limit: 10, epoch: deposed })).toBe(0);
    await db.query('UPDATE baton.leader_lease SET expires_at = now()');
    expect(await store.outboxPurge({ state: 'published', olderThanMs: 0, limit: 10, epoch: current })).toBe(0);
    expect(await left()).toEqual(['p']);
    const again = await takeLeaderLease(db.pool, { holder: 'b' });
    expect(await store.outboxPurge({ state: 'published', olderThanMs: 0, limit: 10, epoch: again })).toBe(1);
    expect(await left()).toEqual([]);
  });
});
