// Runs through the store: a claim takes the head of each ordering key and reads the due
// messages after it (unclaimed, round robin within the batch, cut before a message that is not
// due or has no attempt left); a run message's outcome spends its attempt and is fenced like a
// claim's; the write of a key's publications claims the key's next run in the same statement.

import { describe, expect, it } from 'vitest';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxRow, useOutboxEngines } from './harness.ts';

const db = useTestDatabase();
const keysOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);

describe('outbox runs (store)', () => {
  useOutboxEngines(db);
  const store = () => new PgOutboxStore(db.pool, '"baton"');
  const insert = (rows: Array<[key: string, orderingKey: string | null]>) =>
    db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, ordering_key, max_attempts)
       SELECT 'hooks', 't', k, o, 3 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(k, o, n) ORDER BY n`,
      [rows.map((r) => r[0]), rows.map((r) => r[1])],
    );
  const claim = (limit: number) => store().outboxClaim({ destinations: ['hooks'], limit, visibilityMs: 60_000 });
  const runKeys = (runs: Map<string, Array<{ messageKey: string }>>) =>
    Object.fromEntries([...runs.values()].map((r) => [r[0]!.messageKey, r.map((m) => m.messageKey)]));

  it('claims the head of each key and reads its run, unclaimed, round robin within the batch; no other claim takes either', async () => {
    await insert([
      ...keysOf('a', 6).map((k) => [k, 'A'] as [string, string]),
      ['n', null],
      ...keysOf('b', 3).map((k) => [k, 'B'] as [string, string]),
    ]);
    const first = await claim(7);
    expect(first.claimed.map((m) => [m.messageKey, m.attempt])).toEqual([
      ['a-0000', 1],
      ['n', 1],
      ['b-0000', 1],
    ]);
    // Four places left: the 2nd of A and B, then the 3rd of each.
    expect(runKeys(first.runs)).toEqual({ 'a-0001': ['a-0001', 'a-0002'], 'b-0001': ['b-0001', 'b-0002'] });
    expect([...first.runs.keys()].sort()).toEqual([first.claimed[0]!.id, first.claimed[2]!.id].sort());
    for (const run of first.runs.values()) expect(run.every((m) => m.attempt === 0 && m.state === 'pending')).toBe(true);
    // The heads are hidden and their runs (and whatever follows) held back by them.
    const second = await claim(100);
    expect(second.claimed).toEqual([]);
    expect(second.runs.size).toBe(0);
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.outbox WHERE attempt > 0`);
    expect(rows[0]!.n).toBe(3);
  });

  it('a run stops before a message that is not due or has no attempt left', async () => {
    await insert(keysOf('a', 5).map((k) => [k, 'A']));
    await insert(keysOf('b', 3).map((k) => [k, 'B']));
    await db.query(`UPDATE baton.outbox SET next_attempt_at = now() + interval '1 hour' WHERE message_key = 'a-0003'`);
    await db.query(`UPDATE baton.outbox SET attempt = max_attempts WHERE message_key = 'b-0002'`);
    const { claimed, runs } = await claim(100);
    expect(claimed.map((m) => m.messageKey)).toEqual(['a-0000', 'b-0000']);
    expect(runKeys(runs)).toEqual({ 'a-0001': ['a-0001', 'a-0002'], 'b-0001': ['b-0001'] });
  });

  it("a run message's outcome spends its attempt and is fenced like a claim's: once, and not after another claim took it", async () => {
    await insert(keysOf('a', 4).map((k) => [k, 'A']));
    const s = store();
    const lapsing = await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 1 });
    const [r1, r2, r3] = lapsing.runs.get(lapsing.claimed[0]!.id)!;
    // The head's claim lapses and another claim takes the key again: head attempt 2, run unchanged.
    const again = await waitFor(async () => {
      const c = await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 60_000 });
      return c.claimed.length > 0 ? c : null;
    });
    expect(again.claimed[0]!.attempt).toBe(2);
    // The second relay publishes r1 and fails r2 first; the first relay's late writes then match nothing.
    const fence = (m: typeof r1) => ({ id: m!.id, attempt: m!.attempt, replayCount: m!.replayCount, run: true });
    expect(await s.outboxMarkPublishedMany([fence(r1)])).toEqual(new Set([r1!.id]));
    const failItem = (m: typeof r1) => ({ ...fence(m), error: { name: 'E', message: 'no' }, reject: false, retryAfterMs: null });
    expect(await s.outboxFailMany({ items: [failItem(r2)], backoffBaseMs: 1, backoffCapMs: 1 })).toEqual(new Map([[r2!.id, 'pending']]));
    expect(await s.outboxMarkPublishedMany([fence(r1), fence(r2)])).toEqual(new Set());
    expect(await s.outboxFailMany({ items: [failItem(r2)], backoffBaseMs: 1, backoffCapMs: 1 })).toEqual(new Map());
    const rows = await db.query<{ message_key: string; state: string; attempt: number }>(
      'SELECT message_key, state, attempt FROM baton.outbox ORDER BY id',
    );
    expect(rows.rows).toEqual([
      { message_key: 'a-0000', state: 'pending', attempt: 2 },
      { message_key: 'a-0001', state: 'published', attempt: 1 },
      { message_key: 'a-0002', state: 'pending', attempt: 1 },
      { message_key: 'a-0003', state: 'pending', attempt: 0 },
    ]);
    // A run message failing on its last attempt (attempt + 1 = max_attempts) is dead-lettered.
    await db.query(`UPDATE baton.outbox SET attempt = 2 WHERE message_key = 'a-0003'`);
    expect(await s.outboxFailMany({ items: [failItem({ ...r3!, attempt: 2 })], backoffBaseMs: 1, backoffCapMs: 1 })).toEqual(
      new Map([[r3!.id, 'dead_lettered']]),
    );
    expect(await outboxRow(db, r3!.id)).toMatchObject({ attempt: 3, dead_letter_reason: 'attempts_exhausted' });
  });
  it("the statement that writes a key's messages published claims the key's next run, unless its oldest pending one is not due", async () => {
    await insert([
      ...keysOf('a', 6).map((k) => [k, 'A'] as [string, string]),
      ...keysOf('b', 4).map((k) => [k, 'B'] as [string, string]),
      ['n', null],
    ]);
    const s = store();
    const fence = (m: { id: string; attempt: number; replayCount: number }, run: boolean) => ({
      id: m.id,
      attempt: m.attempt,
      replayCount: m.replayCount,
      run,
    });
    const first = await s.outboxClaim({ destinations: ['hooks'], limit: 7, visibilityMs: 60_000 });
    const [a0, b0, n] = first.claimed;
    const [a1, a2] = first.runs.get(a0!.id)!;
    const [b1, b2] = first.runs.get(b0!.id)!;
    // b1 failed: B stops there. A goes on with a-0003, claimed, and its run; n has no key.
    await s.outboxFailMany({
      items: [{ ...fence(b1!, true), error: { name: 'E', message: 'no' }, reject: false, retryAfterMs: 60_000 }],
      backoffBaseMs: 1,
      backoffCapMs: 1,
    });
    const r = await s.outboxMarkPublishedClaimNext({
      items: [fence(a0!, false), fence(a1!, true), fence(a2!, true), fence(b0!, false), fence(n!, false)],
      limit: 3,
      visibilityMs: 60_000,
    });
    expect(r.written).toEqual(new Set([a0!.id, a1!.id, a2!.id, b0!.id, n!.id]));
    expect(r.next.claimed.map((m) => [m.messageKey, m.attempt])).toEqual([['a-0003', 1]]);
    expect(runKeys(r.next.runs)).toEqual({ 'a-0004': ['a-0004', 'a-0005'] });
    expect(b2!.messageKey).toBe('b-0002');
    // Nothing else is claimable: a-0003 is claimed, b-0001 waits for its retry.
    expect((await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 60_000 })).claimed).toEqual([]);
    // A write that is fenced continues nothing: the key's oldest pending message is the claimed one.
    const [a3] = r.next.claimed;
    const stale = await s.outboxMarkPublishedClaimNext({ items: [{ ...fence(a3!, false), attempt: 0 }], limit: 3, visibilityMs: 60_000 });
    expect(stale.written).toEqual(new Set());
    expect(stale.next.claimed).toEqual([]);
  });
});
