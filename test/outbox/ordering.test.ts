// Per-key order at full speed: a backlog on one ordering key drains without waiting for the
// poll, one message at a time and in record order, within one relay and across two; a failure
// stops the key's run until the retry; a run never outlives its claim; while a key drains,
// other messages are still claimed (when announced, or within a poll period), and stop()
// leaves nothing claimed. The store's side is in runs.test.ts.

import { describe, expect, it } from 'vitest';
import type { PublishMessage } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxStates, RecordingPublisher, useOutboxEngines } from './harness.ts';

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

describe('outbox ordering keys: the rest of the work while a key drains', () => {
  const engines = useOutboxEngines(db);
  const backlog = keysOf('long', 400);

  /** Starts a relay on a 400-message backlog of one key whose publishes take 5 ms each. */
  async function draining(options: Record<string, unknown>) {
    const pub = new RecordingPublisher();
    pub.latencyMs = 5;
    const baton = engines.create({ outbox: { publishers: { hooks: pub }, ...NO_POLL, ...options } });
    await baton.outbox.recordMany(backlog.map((k) => msg(k, 'long')));
    await baton.start();
    await waitFor(() => pub.acked.length >= 20, { message: 'the backlog to be draining' });
    return { pub, baton };
  }
  const ackIndex = (pub: RecordingPublisher, key: string) => pub.ackedKeys().indexOf(key);

  it('a message recorded meanwhile (NOTIFY) is claimed at once, not after the backlog', async () => {
    const { pub } = await draining({});
    // Recorded by another process: only its NOTIFY tells the relay.
    const producer = engines.create({ outbox: { relay: false } });
    await producer.outbox.record(msg('other', null));
    await waitFor(async () => (await outboxStates(db)).published === 401, { message: 'all published', timeoutMs: 20_000 });
    expect(ackIndex(pub, 'other')).toBeLessThan(ackIndex(pub, backlog.at(-1)!) - 100);
    expect(firstAcksByKey(pub.acked).get('long')).toEqual(backlog);
  });

  it('a message no NOTIFY announced is claimed within a poll period, not after the backlog', async () => {
    const { pub } = await draining({ pollIntervalMs: 100 });
    await db.query(`INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) VALUES ('hooks', 't', 'silent', 5)`);
    await waitFor(async () => (await outboxStates(db)).published === 401, { message: 'all published', timeoutMs: 20_000 });
    expect(ackIndex(pub, 'silent')).toBeLessThan(ackIndex(pub, backlog.at(-1)!) - 100);
  });

  it('stop() publishes what the last outcome write claimed, so a restarted relay goes on at once', async () => {
    const { pub, baton } = await draining({});
    await baton.stop();
    const acked = pub.acked.length;
    expect(acked).toBeLessThan(400);
    // Nothing is left claimed: every pending message is due, none has spent an attempt.
    const { rows } = await db.query<{ hidden: number; spent: number }>(
      `SELECT count(*) FILTER (WHERE next_attempt_at > now())::int AS hidden, count(*) FILTER (WHERE attempt > 0)::int AS spent
       FROM baton.outbox WHERE state = 'pending'`,
    );
    expect(rows[0]).toEqual({ hidden: 0, spent: 0 });
    const pub2 = new RecordingPublisher();
    await engines.start({ outbox: { publishers: { hooks: pub2 }, ...NO_POLL } });
    await waitFor(async () => (await outboxStates(db)).published === 400, { message: 'the rest published', timeoutMs: 20_000 });
    expect([...pub.ackedKeys(), ...pub2.ackedKeys()]).toEqual(backlog);
  });
});
