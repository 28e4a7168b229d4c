// Per-key order at full speed: a backlog on one ordering key drains without waiting for the
// poll, one message at a time and in record order, within one relay and across two; a failure
// stops the key's run until the retry; a run never outlives its claim. Through the store: a
// claim's runs (round robin, cut before a message that is not due) and their fenced writes.

import { describe, expect, it } from 'vitest';
import type { PublishMessage } from '../../src/index.ts';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { RecordingPublisher, outboxRow, outboxStates, useOutboxEngines } from './harness.ts';

const db = useTestDatabase();
const msg = (key: string, orderingKey: string | null, extra: Record<string, unknown> = {}) => ({
  destination: 'hooks',
  topic: 't',
  payload: { key },
  messageKey: key,
  ...(orderingKey === null ? {} : { orderingKey }),
  ...extra,
});
/** A poll period no test waits out: whatever drains does so without polling. */
const NO_POLL = { pollIntervalMs: 600_000, backoffBaseMs: 1, backoffCapMs: 5 };

/** The first acknowledgement of each message, per ordering key, in the order they came. */
function firstAcksByKey(acked: PublishMessage[]): Map<string, string[]> {
  const seen = new Set<string>();
  const out = new Map<string, string[]>();
  for (const m of acked) {
    if (seen.has(m.messageKey) || m.orderingKey === null) continue;
    seen.add(m.messageKey);
    out.set(m.orderingKey, [...(out.get(m.orderingKey) ?? []), m.messageKey]);
  }
  return out;
}

const keysOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);

describe('outbox ordering keys at full speed', () => {
  const engines = useOutboxEngines(db);

  it('drains a backlog on one key without waiting for a poll, one at a time, in record order', async () => {
    const pub = new RecordingPublisher();
    const keys = keysOf('k', 250);
    const baton = engines.create({ outbox: { publishers: { hooks: pub }, batchSize: 100, ...NO_POLL } });
    await baton.outbox.recordMany(keys.map((k) => msg(k, 'one')));
    const started = performance.now();
    await baton.start();
    // Waiting for the poll would take 250 poll periods; one period is past the deadline already.
    await waitFor(async () => (await outboxStates(db)).published === 250, {
      message: '250 messages of one key published',
      timeoutMs: 20_000,
    });
    expect(performance.now() - started).toBeLessThan(NO_POLL.pollIntervalMs);
    expect(pub.ackedKeys()).toEqual(keys);
    expect(pub.maxInFlightPerKey).toBe(1);
    const { rows } = await db.query<{ attempt: number; n: number }>(
      'SELECT attempt, count(*)::int AS n FROM baton.outbox GROUP BY attempt',
    );
    expect(rows).toEqual([{ attempt: 1, n: 250 }]);
  });

  it('a key recorded while its previous message is in flight is published right after it, with no poll', async () => {
    const pub = new RecordingPublisher();
    pub.latencyMs = 20;
    const baton = await engines.start({ outbox: { publishers: { hooks: pub }, ...NO_POLL } });
    // Each record commits while the relay may be busy with the key's previous message.
    for (const k of keysOf('live', 20)) await baton.outbox.record(msg(k, 'live'));
    await waitFor(async () => (await outboxStates(db)).published === 20, { message: '20 messages published', timeoutMs: 20_000 });
    expect(pub.ackedKeys()).toEqual(keysOf('live', 20));
    expect(pub.maxInFlightPerKey).toBe(1);
  });

  it('a failure stops the key at that message until its retry succeeds; other keys and later messages wait in order', async () => {
    const pub = new RecordingPublisher();
    let failures = 0;
    pub.decide = (m) => (m.messageKey === 'a-0003' && failures++ < 2 ? 'retry' : 'ok');
    const baton = engines.create({ outbox: { publishers: { hooks: pub }, batchSize: 50, ...NO_POLL, pollIntervalMs: 50 } });
    await baton.outbox.recordMany([...keysOf('a', 10).map((k) => msg(k, 'A')), ...keysOf('b', 10).map((k) => msg(k, 'B'))]);
    await baton.start();
    await waitFor(async () => (await outboxStates(db)).published === 20, { message: 'all 20 published' });
    const order = firstAcksByKey(pub.acked);
    expect(order.get('A')).toEqual(keysOf('a', 10));
    expect(order.get('B')).toEqual(keysOf('b', 10));
    // Nothing after a-0003 was tried before a-0003 was acknowledged.
    const a3Ack = pub.calls.findLastIndex((c) => c.messageKey === 'a-0003');
    expect(pub.calls.slice(0, a3Ack).filter((c) => c.messageKey > 'a-0003' && c.messageKey.startsWith('a'))).toEqual([]);
    const { rows } = await db.query<{ message_key: string; attempt: number }>(
      `SELECT message_key, attempt FROM baton.outbox WHERE message_key IN ('a-0003', 'a-0004') ORDER BY 1`,
    );
    // a-0004 spent one attempt: the failures before it did not spend its budget.
    expect(rows).toEqual([
      { message_key: 'a-0003', attempt: 3 },
      { message_key: 'a-0004', attempt: 1 },
    ]);
  });

  it('two relays keep every key in order, one message of a key in flight at a time, through retries and a dead letter', async () => {
    // One publisher shared by both relays sees every publish of either.
    const pub = new RecordingPublisher();
    pub.latencyMs = 1;
    const tries = new Map<string, number>();
    pub.decide = (m) => {
      const n = (tries.get(m.messageKey) ?? 0) + 1;
      tries.set(m.messageKey, n);
      if (m.messageKey === 'c-0007') return 'reject';
      // Every fifth message fails its first try.
      return Number(m.messageKey.slice(2)) % 5 === 2 && n === 1 ? 'retry' : 'ok';
    };
    const options = { outbox: { publishers: { hooks: pub }, batchSize: 20, ...NO_POLL, pollIntervalMs: 20 } };
    const [r1, r2] = [engines.create(options), engines.create(options)];
    const keys = ['a', 'b', 'c', 'd'];
    await r1.outbox.recordMany(keys.flatMap((k) => keysOf(k, 60).map((m) => msg(m, k))));
    const unkeyed = keysOf('u', 40);
    await r2.outbox.recordMany(unkeyed.map((m) => msg(m, null)));
    await Promise.all([r1.start(), r2.start()]);
    await waitFor(async () => (await outboxStates(db)).pending === undefined, { message: 'nothing pending', timeoutMs: 30_000 });
    expect(await outboxStates(db)).toEqual({ published: 279, dead_lettered: 1 });
    const order = firstAcksByKey(pub.acked);
    for (const k of keys) expect(order.get(k)).toEqual(keysOf(k, 60).filter((m) => m !== 'c-0007'));
    expect(pub.maxInFlightPerKey).toBe(1);
    // Both relays took part.
    expect(r1.outbox.relayCounters()!.published).toBeGreaterThan(0);
    expect(r2.outbox.relayCounters()!.published).toBeGreaterThan(0);
  });

  it('a run starts no publish that could outlast its claim, so a second relay never overlaps it', async () => {
    // Each publish takes 150 ms; a claim lasts 1 s and a publish may take 400 ms, so a run may
    // start publishes for 600 ms. A run that went on would still be publishing when the claim
    // lapsed and the other relay took the key again.
    const pub = new RecordingPublisher();
    pub.latencyMs = 150;
    const options = {
      outbox: { publishers: { hooks: pub }, visibilityMs: 1_000, publishTimeoutMs: 400, ...NO_POLL, pollIntervalMs: 20 },
    };
    const [r1, r2] = [engines.create(options), engines.create(options)];
    const keys = keysOf('s', 16);
    await r1.outbox.recordMany(keys.map((k) => msg(k, 'slow')));
    await Promise.all([r1.start(), r2.start()]);
    await waitFor(async () => (await outboxStates(db)).published === 16, { message: '16 slow messages published', timeoutMs: 20_000 });
    expect(pub.maxInFlightPerKey).toBe(1);
    expect(firstAcksByKey(pub.acked).get('slow')).toEqual(keys);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM baton.outbox WHERE attempt <> 1');
    expect(rows[0]!.n).toBe(0);
  });
});

describe('outbox runs (store)', () => {
  useOutboxEngines(db);
  const store = () => new PgOutboxStore(db.pool, '"baton"');
  const insert = (rows: Array<[key: string, orderingKey: string | null]>) =>
    db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, ordering_key, max_attempts)
       SELECT 'hooks', 't', k, o, 3 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(k, o, n) ORDER BY n`,
      [rows.map((r) => r[0]), rows.map((r) => r[1])],
    );
  const claim = (limit: number) => store().claim({ destinations: ['hooks'], limit, visibilityMs: 60_000 });
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
    const lapsing = await s.claim({ destinations: ['hooks'], limit: 10, visibilityMs: 1 });
    const [r1, r2, r3] = lapsing.runs.get(lapsing.claimed[0]!.id)!;
    // The head's claim lapses and another claim takes the key again: head attempt 2, run unchanged.
    const again = await waitFor(async () => {
      const c = await s.claim({ destinations: ['hooks'], limit: 10, visibilityMs: 60_000 });
      return c.claimed.length > 0 ? c : null;
    });
    expect(again.claimed[0]!.attempt).toBe(2);
    // The second relay publishes r1 and fails r2 first; the first relay's late writes then match nothing.
    const fence = (m: typeof r1) => ({ id: m!.id, attempt: m!.attempt, replayCount: m!.replayCount, run: true });
    expect(await s.publishedMany([fence(r1)])).toEqual(new Set([r1!.id]));
    const failItem = (m: typeof r1) => ({ ...fence(m), error: { name: 'E', message: 'no' }, reject: false, retryAfterMs: null });
    expect(await s.failMany({ items: [failItem(r2)], backoffBaseMs: 1, backoffCapMs: 1 })).toEqual(new Map([[r2!.id, 'pending']]));
    expect(await s.publishedMany([fence(r1), fence(r2)])).toEqual(new Set());
    expect(await s.failMany({ items: [failItem(r2)], backoffBaseMs: 1, backoffCapMs: 1 })).toEqual(new Map());
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
    expect(await s.failMany({ items: [failItem({ ...r3!, attempt: 2 })], backoffBaseMs: 1, backoffCapMs: 1 })).toEqual(
      new Map([[r3!.id, 'dead_lettered']]),
    );
    expect(await outboxRow(db, r3!.id)).toMatchObject({ attempt: 3, dead_letter_reason: 'attempts_exhausted' });
  });
});
