// The relay end to end through createBaton, and its claim protocol through the store: every
// committed message is published at least once; failures retry with backoff until the budget
// is spent, then dead-letter (at once when rejected); a claimed message is invisible to a
// second relay and reappears when its claim lapses, whose late outcome write is fenced off;
// messages of one ordering key go one at a time in record order; replay and stats.

import { describe, expect, it } from 'vitest';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import { isBatonError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxRow, outboxStates, RecordingPublisher, useOutboxEngines } from './harness.ts';

const db = useTestDatabase();
const msg = (key: string, extra: Record<string, unknown> = {}) => ({
  destination: 'hooks',
  topic: 't',
  payload: { key },
  messageKey: key,
  ...extra,
});
const fast = { backoffBaseMs: 1, backoffCapMs: 5, pollIntervalMs: 50 };

describe('outbox relay', () => {
  const engines = useOutboxEngines(db);

  it('drains every committed message at least once, in batches', async () => {
    const pub = new RecordingPublisher();
    const baton = await engines.start({ outbox: { publishers: { hooks: pub }, batchSize: 50, ...fast } });
    const keys = Array.from({ length: 300 }, (_, i) => `m${i}`);
    await baton.outbox.recordMany(keys.map((k) => msg(k)));
    await waitFor(async () => (await outboxStates(db)).published === 300, { message: '300 messages published', timeoutMs: 20_000 });
    expect(new Set(pub.ackedKeys())).toEqual(new Set(keys));
    expect(baton.outbox.relayCounters()).toMatchObject({ published: 300, retried: 0, deadLettered: 0 });
  });

  it('retries a failed publish with backoff, then writes published; a spent budget dead-letters; a rejection dead-letters at once', async () => {
    const pub = new RecordingPublisher();
    pub.decide = (m) => {
      const calls = pub.calls.filter((c) => c.messageKey === m.messageKey).length;
      if (m.messageKey === 'flaky') return calls <= 2 ? 'retry' : 'ok';
      if (m.messageKey === 'down') return 'retry';
      if (m.messageKey === 'bad') return 'reject';
      return 'ok';
    };
    const baton = await engines.start({ outbox: { publishers: { hooks: pub }, ...fast } });
    const [flaky, down, bad] = await baton.outbox.recordMany([msg('flaky'), msg('down', { maxAttempts: 3 }), msg('bad')]);
    await waitFor(async () => (await outboxStates(db)).pending === undefined, { message: 'no message pending' });
    expect(await outboxRow(db, flaky!.message.id)).toMatchObject({ state: 'published', attempt: 3, last_error: null });
    const d = await outboxRow(db, down!.message.id);
    expect(d).toMatchObject({ state: 'dead_lettered', attempt: 3, dead_letter_reason: 'attempts_exhausted' });
    expect(d.last_error).toMatchObject({ name: 'PublishError', message: expect.stringContaining('refused') });
    expect(await outboxRow(db, bad!.message.id)).toMatchObject({ state: 'dead_lettered', attempt: 1, dead_letter_reason: 'rejected' });
    expect(pub.calls.filter((c) => c.messageKey === 'down').map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(baton.outbox.relayCounters()).toMatchObject({ published: 1, retried: 4, deadLettered: 2 });
  });

  it('a message whose last claim lapsed with no attempt left is counted and reported as dead-lettered', async () => {
    // As a relay that died mid-publish on the last attempt leaves it: attempt spent, claim lapsed.
    await db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts, attempt, next_attempt_at)
       VALUES ('hooks', 't', 'lapsed', 1, 1, now() - interval '1 second')`,
    );
    const pub = new RecordingPublisher();
    const baton = engines.create({ outbox: { publishers: { hooks: pub }, ...fast } });
    const dead: Array<{ destination: string; reason: string }> = [];
    baton.outbox.events.on('deadLettered', (e) => dead.push({ destination: e.destination, reason: e.reason }));
    await baton.start();
    await waitFor(() => dead.length > 0, { message: 'the deadLettered event' });
    expect(dead).toEqual([{ destination: 'hooks', reason: 'attempts_exhausted' }]);
    expect(baton.outbox.relayCounters()).toMatchObject({ deadLettered: 1, published: 0 });
    expect(pub.calls).toEqual([]);
  });

  it('a publish past its deadline counts as failed and is retried', async () => {
    const pub = new RecordingPublisher();
    pub.decide = (_, call) => (call === 1 ? 'hang' : 'ok');
    const baton = await engines.start({ outbox: { publishers: { hooks: pub }, publishTimeoutMs: 200, visibilityMs: 5_000, ...fast } });
    const { message } = await baton.outbox.record(msg('slow'));
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'published', {
      message: 'the hung message to be published on retry',
    });
    const row = await outboxRow(db, message.id);
    expect(row.attempt).toBe(2);
    expect(pub.calls.map((c) => c.attempt)).toEqual([1, 2]);
  });

  it('claims only destinations it has a publisher for', async () => {
    const pub = new RecordingPublisher();
    const baton = await engines.start({ outbox: { publishers: { hooks: pub }, ...fast } });
    const [, elsewhere] = await baton.outbox.recordMany([msg('here'), msg('there', { destination: 'elsewhere' })]);
    await waitFor(() => pub.acked.length === 1);
    expect(await outboxRow(db, elsewhere!.message.id)).toMatchObject({ state: 'pending', attempt: 0 });
  });

  it('publishes the messages of one ordering key one at a time, in record order; a failure holds back only that key', async () => {
    const pub = new RecordingPublisher();
    let a1Failures = 0;
    pub.decide = (m) => {
      if (m.messageKey === 'a1' && a1Failures < 3) {
        a1Failures++;
        return 'retry';
      }
      return 'ok';
    };
    const baton = engines.create({ outbox: { publishers: { hooks: pub }, batchSize: 10, ...fast } });
    await baton.outbox.recordMany([
      msg('a1', { orderingKey: 'A' }),
      msg('b1', { orderingKey: 'B' }),
      msg('a2', { orderingKey: 'A' }),
      msg('n1'),
      msg('b2', { orderingKey: 'B' }),
      msg('a3', { orderingKey: 'A' }),
    ]);
    await baton.start();
    await waitFor(async () => (await outboxStates(db)).published === 6, { message: 'all six published' });
    const ackedA = pub.ackedKeys().filter((k) => k.startsWith('a'));
    expect(ackedA).toEqual(['a1', 'a2', 'a3']);
    expect(pub.ackedKeys().filter((k) => k.startsWith('b'))).toEqual(['b1', 'b2']);
    // a2 was not even tried while a1 was failing, and B did not wait for A.
    const firstA2Call = pub.calls.findIndex((c) => c.messageKey === 'a2');
    const a1Ack = pub.calls.findLastIndex((c) => c.messageKey === 'a1');
    expect(firstA2Call).toBeGreaterThan(a1Ack);
    expect(pub.calls.findIndex((c) => c.messageKey === 'b2')).toBeLessThan(a1Ack);
  });

  it('replays one message (404 unknown, 409 while pending) and a page of dead letters; stats count by destination and state', async () => {
    const pub = new RecordingPublisher();
    let refuse = true;
    pub.decide = () => (refuse ? 'reject' : 'ok');
    const baton = await engines.start({ outbox: { publishers: { hooks: pub }, ...fast } });
    const recorded = await baton.outbox.recordMany([msg('r1'), msg('r2'), msg('r3')]);
    await baton.outbox.record(msg('x', { destination: 'nobody' }));
    await waitFor(async () => (await outboxStates(db)).dead_lettered === 3);
    const stats = await baton.outbox.stats();
    expect(stats.totals).toEqual({ pending: 1, published: 0, dead_lettered: 3 });
    expect(stats.destinations).toEqual([
      { destination: 'hooks', counts: { pending: 0, published: 0, dead_lettered: 3 } },
      { destination: 'nobody', counts: { pending: 1, published: 0, dead_lettered: 0 } },
    ]);
    expect(stats.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(0);

    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: unknown) => (isBatonError(e) ? e.code : String(e)),
      );
    expect(await codeOf(baton.outbox.replay('999999'))).toBe('OUTBOX_MESSAGE_NOT_FOUND');
    expect(await codeOf(baton.outbox.replay('not-an-id'))).toBe('OUTBOX_MESSAGE_NOT_FOUND');
    const pending = (await baton.outbox.list({ state: 'pending' })).messages[0]!;
    expect(await codeOf(baton.outbox.replay(pending.id))).toBe('OUTBOX_STATE_CONFLICT');

    refuse = false;
    const one = await baton.outbox.replay(recorded[0]!.message.id);
    expect(one).toMatchObject({ state: 'pending', attempt: 0, replayCount: 1 });
    const page = await baton.outbox.replayDeadLetters({ limit: 1 });
    expect(page.map((m) => m.messageKey)).toEqual(['r2']);
    await waitFor(async () => (await outboxStates(db)).published === 2);
    expect((await outboxRow(db, recorded[2]!.message.id)).state).toBe('dead_lettered');
    const listed = await baton.outbox.list({ state: 'published', destination: 'hooks' });
    expect(listed.messages.map((m) => m.messageKey)).toEqual(['r2', 'r1']);
  });

  it('stop() closes the publishers', async () => {
    const pub = new RecordingPublisher();
    const baton = await engines.start({ outbox: { publishers: { hooks: pub } } });
    await baton.stop();
    expect(pub.closed).toBe(true);
  });
});

describe('outbox claims (store)', () => {
  useOutboxEngines(db);
  const store = () => new PgOutboxStore(db.pool, '"baton"');

  it('a claimed message is invisible to a second claim; a lapsed claim reappears with the next attempt and fences the first', async () => {
    await db.query(`INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) VALUES ('hooks', 't', 'k', 5)`);
    const s = store();
    const first = await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 300 });
    expect(first.claimed.map((m) => m.attempt)).toEqual([1]);
    expect((await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 300 })).claimed).toEqual([]);
    // The first relay never answers: once next_attempt_at passes, the message is claimed again.
    const second = await waitFor(
      async () => (await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 60_000 })).claimed[0],
      {
        message: 'the abandoned claim to reappear',
      },
    );
    expect(second.attempt).toBe(2);
    const id = second.id;
    expect(await s.outboxMarkPublishedMany([{ id, attempt: 1, replayCount: 0 }])).toEqual(new Set());
    expect(
      await s.outboxFailMany({
        items: [{ id, attempt: 1, replayCount: 0, error: { name: 'E', message: 'late' }, reject: true, retryAfterMs: null }],
        backoffBaseMs: 1,
        backoffCapMs: 1,
      }),
    ).toEqual(new Map());
    expect(await s.outboxMarkPublishedMany([{ id, attempt: 2, replayCount: 0 }])).toEqual(new Set([id]));
    expect(await s.outboxMarkPublishedMany([{ id, attempt: 2, replayCount: 0 }])).toEqual(new Set());
  });

  it('a claim made before a replay is fenced, even when a claim after it reaches the same attempt', async () => {
    await db.query(`INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) VALUES ('hooks', 't', 'k', 5)`);
    const s = store();
    // A relay claims (attempt 1) and stalls; another publishes; an operator replays the message.
    const [stale] = (await s.outboxClaim({ destinations: ['hooks'], limit: 1, visibilityMs: 1 })).claimed;
    const id = stale!.id;
    // An empty array is truthy: wait for the message itself, once the first claim has lapsed.
    const b = await waitFor(
      async () => (await s.outboxClaim({ destinations: ['hooks'], limit: 1, visibilityMs: 60_000 })).claimed[0] ?? null,
    );
    expect(await s.outboxMarkPublishedMany([{ id, attempt: b!.attempt, replayCount: b!.replayCount }])).toEqual(new Set([id]));
    expect((await s.outboxReplay(id))?.replayCount).toBe(1);
    // After the replay a new claim is attempt 1 again, as the stalled one was.
    const [c] = (await s.outboxClaim({ destinations: ['hooks'], limit: 1, visibilityMs: 60_000 })).claimed;
    expect([c!.attempt, stale!.attempt]).toEqual([1, 1]);
    // The stalled relay's late outcome touches nothing; the current claim's does.
    const late = { id, attempt: stale!.attempt, replayCount: stale!.replayCount };
    expect(
      await s.outboxFailMany({
        items: [{ ...late, error: { name: 'E', message: 'late' }, reject: true, retryAfterMs: null }],
        backoffBaseMs: 1,
        backoffCapMs: 1,
      }),
    ).toEqual(new Map());
    expect(await s.outboxMarkPublishedMany([late])).toEqual(new Set());
    expect(await s.outboxMarkPublishedMany([{ id, attempt: c!.attempt, replayCount: c!.replayCount }])).toEqual(new Set([id]));
  });

  it('concurrent claims never hand one message to two claimers', async () => {
    await db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) SELECT 'hooks', 't', 'k' || g, 5 FROM generate_series(1, 200) g`,
    );
    const s = store();
    const claims = await Promise.all(
      Array.from({ length: 8 }, () => s.outboxClaim({ destinations: ['hooks'], limit: 40, visibilityMs: 60_000 })),
    );
    const ids = claims.flatMap((c) => c.claimed.map((m) => m.id));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(200);
  });

  it('a message whose last claim lapsed with no attempt left is dead-lettered by the next claim', async () => {
    await db.query(`INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) VALUES ('hooks', 't', 'k', 1)`);
    const s = store();
    expect((await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 1 })).claimed).toHaveLength(1);
    const next = await waitFor(async () => {
      const r = await s.outboxClaim({ destinations: ['hooks'], limit: 10, visibilityMs: 1 });
      return r.exhausted.length > 0 ? r : null;
    });
    expect(next.claimed).toEqual([]);
    expect(next.exhausted.map((m) => [m.destination, m.state])).toEqual([['hooks', 'dead_lettered']]);
    const { rows } = await db.query('SELECT state, dead_letter_reason, attempt FROM baton.outbox');
    expect(rows).toEqual([{ state: 'dead_lettered', dead_letter_reason: 'attempts_exhausted', attempt: 1 }]);
  });

  it('a Retry-After longer than the backoff is honoured', async () => {
    await db.query(`INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) VALUES ('hooks', 't', 'k', 5)`);
    const s = store();
    const [m] = (await s.outboxClaim({ destinations: ['hooks'], limit: 1, visibilityMs: 60_000 })).claimed;
    await s.outboxFailMany({
      items: [{ id: m!.id, attempt: 1, replayCount: 0, error: { name: 'E', message: 'busy' }, reject: false, retryAfterMs: 120_000 }],
      backoffBaseMs: 1,
      backoffCapMs: 600_000,
    });
    const { rows } = await db.query(`SELECT extract(epoch FROM next_attempt_at - now()) AS s FROM baton.outbox`);
    expect(Number(rows[0].s)).toBeGreaterThan(110);
  });
});
