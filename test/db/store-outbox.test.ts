// Conformance of the outbox store's reads and bulk writes (PgOutboxStore) on a real database:
// insert (a duplicate message key read back, not written twice; the NOTIFY rides with it),
// get scoped by tenant, list by state, destination and tenant, the bulk replay of dead
// letters, and the stats by destination. Claims and outcome writes are in test/outbox/.

import pg from 'pg';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import type { NewOutboxMessage } from '../../src/types/outbox.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();
let store: PgOutboxStore;
const CHANNEL = 'outbox_store_test';
beforeAll(() => {
  store = new PgOutboxStore(db.pool, quoteSchema(db.schema));
});
beforeEach(async () => {
  await db.query(`TRUNCATE ${db.schema}.outbox`);
});

let seq = 0;
function message(over: Partial<NewOutboxMessage> = {}): NewOutboxMessage {
  return {
    tenantId: 'default',
    destination: 'hooks',
    topic: 't',
    payload: { n: ++seq },
    headers: {},
    messageKey: `m${seq}`,
    orderingKey: null,
    maxAttempts: 3,
    ...over,
  };
}
const insert = async (ms: NewOutboxMessage[]) => (await store.outboxInsertMany({ messages: ms, channel: CHANNEL })).map((r) => r.message);
const deadLetter = (ids: string[]) =>
  db.query(
    `UPDATE ${db.schema}.outbox SET state = 'dead_lettered', dead_letter_reason = 'rejected', finished_at = now() WHERE id = ANY($1::bigint[])`,
    [ids],
  );

describe('PgOutboxStore', () => {
  it('outboxInsertMany writes a batch in order, reads a duplicate message key back, and notifies with the commit', async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    try {
      const heard = new Promise<string>((resolve) => listener.on('notification', (n) => resolve(n.channel)));
      await listener.query(`LISTEN ${CHANNEL}`);
      const [a, b] = [message(), message()];
      const first = await store.outboxInsertMany({ messages: [a, b], channel: CHANNEL });
      expect(first.map((r) => [r.message.messageKey, r.created])).toEqual([
        [a.messageKey, true],
        [b.messageKey, true],
      ]);
      expect(await heard).toBe(CHANNEL);
      const again = await store.outboxInsertMany({ messages: [message({ messageKey: a.messageKey })], channel: CHANNEL });
      expect(again.map((r) => [r.message.id, r.created])).toEqual([[first[0]!.message.id, false]]);
      const n = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.schema}.outbox`);
      expect(n.rows[0]!.n).toBe(2);
    } finally {
      await listener.end();
    }
  });

  it('outboxGet is scoped by tenant; outboxList filters by state, destination and tenant, newest first', async () => {
    const [a, b, c] = await insert([message(), message({ destination: 'nats' }), message({ tenantId: 'acme' })]);
    await deadLetter([b!.id]);
    expect((await store.outboxGet(a!.id))?.messageKey).toBe(a!.messageKey);
    expect((await store.outboxGet(c!.id, 'acme'))?.id).toBe(c!.id);
    expect(await store.outboxGet(c!.id, 'default')).toBeNull();
    expect(await store.outboxGet('999999999')).toBeNull();
    const ids = async (p: Parameters<PgOutboxStore['outboxList']>[0]) => (await store.outboxList(p)).map((m) => m.id);
    expect(await ids({ limit: 10, offset: 0 })).toEqual([c!.id, b!.id, a!.id]);
    expect(await ids({ state: 'dead_lettered', limit: 10, offset: 0 })).toEqual([b!.id]);
    expect(await ids({ destination: 'hooks', limit: 10, offset: 0 })).toEqual([c!.id, a!.id]);
    expect(await ids({ tenantId: 'acme', limit: 10, offset: 0 })).toEqual([c!.id]);
    expect(await ids({ limit: 1, offset: 1 })).toEqual([b!.id]);
  });

  it('outboxReplayDeadLetters puts the oldest dead letters of a destination back to pending, up to the limit', async () => {
    const [a, b, c, d] = await insert([message(), message(), message(), message({ destination: 'nats' })]);
    await deadLetter([a!.id, b!.id, c!.id, d!.id]);
    const replayed = await store.outboxReplayDeadLetters({ limit: 2, destination: 'hooks' });
    expect(replayed.map((m) => [m.id, m.state, m.attempt, m.replayCount])).toEqual([
      [a!.id, 'pending', 0, 1],
      [b!.id, 'pending', 0, 1],
    ]);
    expect((await store.outboxGet(c!.id))?.state).toBe('dead_lettered');
    expect((await store.outboxGet(d!.id))?.state).toBe('dead_lettered');
    expect(await store.outboxReplayDeadLetters({ limit: 10, tenantId: 'acme' })).toEqual([]);
  });

  it('outboxStats counts by destination and state, and the oldest pending message age', async () => {
    expect(await store.outboxStats({})).toEqual({ byDestination: [], oldestPendingAgeSeconds: null });
    const [, b] = await insert([message(), message(), message({ destination: 'nats', tenantId: 'acme' })]);
    await deadLetter([b!.id]);
    await db.query(`UPDATE ${db.schema}.outbox SET created_at = now() - interval '1 hour' WHERE state = 'pending'`);
    const stats = await store.outboxStats({});
    const by = [...stats.byDestination].sort((x, y) => `${x.destination}${x.state}`.localeCompare(`${y.destination}${y.state}`));
    expect(by).toEqual([
      { destination: 'hooks', state: 'dead_lettered', n: 1 },
      { destination: 'hooks', state: 'pending', n: 1 },
      { destination: 'nats', state: 'pending', n: 1 },
    ]);
    expect(stats.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(3_600);
    expect((await store.outboxStats({ tenantId: 'acme' })).byDestination).toEqual([{ destination: 'nats', state: 'pending', n: 1 }]);
  });
});
