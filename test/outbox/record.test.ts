// Recording is transactional: a message commits or vanishes with the caller's business write,
// the caller's transaction is never begun, committed or rolled back by Baton, a lost
// connection loses both halves together, a repeated messageKey returns the first message, and
// the commit wakes a relay by NOTIFY (its poll is far too slow to be what publishes).

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isBatonError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxStates, RecordingPublisher, useOutboxEngines } from './harness.ts';

const db = useTestDatabase();
const msg = (key: string, extra: Record<string, unknown> = {}) => ({
  destination: 'hooks',
  topic: 'order.placed',
  payload: { key },
  messageKey: key,
  ...extra,
});

async function withClient<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: db.url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('outbox.record', () => {
  const engines = useOutboxEngines(db);

  it('commits with the business write and vanishes with its rollback, inside the same transaction', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS public.orders (id text PRIMARY KEY)');
    await db.query('TRUNCATE public.orders');
    const baton = engines.create();
    await withClient(async (c) => {
      for (const [id, end] of [
        ['o1', 'COMMIT'],
        ['o2', 'ROLLBACK'],
      ] as const) {
        await c.query('BEGIN');
        await c.query('INSERT INTO public.orders VALUES ($1)', [id]);
        const before = (await c.query('SELECT txid_current() AS x')).rows[0].x;
        const r = await baton.outbox.record(msg(id), { client: c });
        expect(r.created).toBe(true);
        // Still the caller's transaction: same txid, still open (Baton neither committed nor began one).
        expect((await c.query('SELECT txid_current() AS x')).rows[0].x).toBe(before);
        expect(
          (await c.query("SELECT current_setting('transaction_isolation') AS i, now() = statement_timestamp() AS fresh")).rows[0].fresh,
        ).toBe(false);
        await c.query(end);
      }
    });
    const { rows } = await db.query('SELECT message_key FROM baton.outbox ORDER BY id');
    expect(rows.map((r) => r.message_key)).toEqual(['o1']);
    expect((await db.query('SELECT id FROM public.orders')).rows.map((r) => r.id)).toEqual(['o1']);
  });

  it('a connection lost before COMMIT loses the business write and the message together', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS public.orders (id text PRIMARY KEY)');
    await db.query('TRUNCATE public.orders');
    const baton = engines.create();
    await withClient(async (c) => {
      await c.query('BEGIN');
      await c.query('INSERT INTO public.orders VALUES ($1)', ['lost']);
      await baton.outbox.record(msg('lost'), { client: c });
      const pid = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
      await expect(c.query('COMMIT')).rejects.toThrow();
    });
    expect((await db.query('SELECT count(*)::int AS n FROM public.orders')).rows[0].n).toBe(0);
    expect(await outboxStates(db)).toEqual({});
  });

  it('a repeated messageKey (same tenant and destination) returns the first message; another destination is another message', async () => {
    const baton = engines.create();
    const first = await baton.outbox.record(msg('k1', { payload: { v: 1 } }));
    const again = await baton.outbox.recordMany([
      msg('k1', { payload: { v: 2 } }),
      msg('k2'),
      msg('k2'),
      msg('k1', { destination: 'other' }),
    ]);
    expect(again.map((r) => [r.message.messageKey, r.message.destination, r.created])).toEqual([
      ['k1', 'hooks', false],
      ['k2', 'hooks', true],
      ['k2', 'hooks', false],
      ['k1', 'other', true],
    ]);
    expect(again[0]!.message).toMatchObject({ id: first.message.id, payload: { v: 1 } });
    expect(again[2]!.message.id).toBe(again[1]!.message.id);
    expect((await db.query('SELECT count(*)::int AS n FROM baton.outbox')).rows[0].n).toBe(3);
  });

  it('refuses bad messages with INVALID_ARGUMENT naming the field, writing nothing of the batch', async () => {
    const baton = engines.create();
    const bad = [
      [{ ...msg('a'), destination: 'no spaces' }, 'destination'],
      [{ ...msg('a'), headers: { 'Baton-Signature': 'x' } }, 'reserved'],
      [{ ...msg('a'), headers: { 'Webhook-Id': 'x' } }, 'reserved'],
      [{ ...msg('a'), payload: { s: 'a\u0000b' } }, 'NUL'],
      [{ ...msg('a'), messageKey: '' }, 'messageKey'],
      [{ ...msg('a'), extra: 1 }, 'extra'],
    ] as const;
    for (const [m, word] of bad) {
      const err = await baton.outbox.recordMany([msg('fine'), m as never]).catch((e: unknown) => e);
      expect(isBatonError(err) && err.code).toBe('INVALID_ARGUMENT');
      expect(String((err as Error).message)).toContain(word);
    }
    expect(await outboxStates(db)).toEqual({});
  });

  it('the commit wakes a relay by NOTIFY (its poll is 60 s); a rolled-back message is never published', async () => {
    const pub = new RecordingPublisher();
    await engines.start({ outbox: { publishers: { hooks: pub }, pollIntervalMs: 60_000 } });
    const producer = engines.create();
    await withClient(async (c) => {
      await c.query('BEGIN');
      await producer.outbox.record(msg('rolled-back'), { client: c });
      await c.query('ROLLBACK');
      await c.query('BEGIN');
      await producer.outbox.record(msg('committed'), { client: c });
      await c.query('COMMIT');
    });
    await waitFor(() => pub.acked.length === 1, { message: 'the committed message to be published', timeoutMs: 15_000 });
    expect(pub.ackedKeys()).toEqual(['committed']);
    await waitFor(async () => (await outboxStates(db)).published === 1, { message: 'its outcome to be written' });
    expect(await outboxStates(db)).toEqual({ published: 1 });
  });

  it('producers of one ordering key are serialised until commit, so ids follow commit order within the key', async () => {
    const baton = engines.create();
    await withClient((t1) =>
      withClient(async (t2) => {
        await t1.query('BEGIN');
        await baton.outbox.record(msg('first', { orderingKey: 'cart-1' }), { client: t1 });
        await t2.query('BEGIN');
        const t2pid = (await t2.query('SELECT pg_backend_pid() AS p')).rows[0].p;
        let done = false;
        const second = baton.outbox.record(msg('second', { orderingKey: 'cart-1' }), { client: t2 }).then((r) => {
          done = true;
          return r;
        });
        // Another key is not held up.
        await baton.outbox.record(msg('other-key', { orderingKey: 'cart-2' }));
        await waitFor(
          async () =>
            (await db.query('SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1', [t2pid])).rows[0]?.wait_event_type === 'Lock',
          { message: "the second producer to wait on the key's lock" },
        );
        expect(done).toBe(false);
        await t1.query('COMMIT');
        const r = await second;
        await t2.query('COMMIT');
        expect(r.created).toBe(true);
      }),
    );
    const { rows } = await db.query("SELECT message_key FROM baton.outbox WHERE ordering_key = 'cart-1' ORDER BY id");
    expect(rows.map((r) => r.message_key)).toEqual(['first', 'second']);
  });
});
