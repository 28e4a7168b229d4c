// Conformance of jobInsertMany through enqueue: the stored spec, idempotency keys, batches,
// transactional enqueue on the caller's client, and bad input refused with nothing written.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { RUN_AT_MAX, RUN_AT_MIN } from '../../src/core/job-spec.ts';
import { channelFor } from '../../src/core/notifier.ts';
import { createBaton } from '../../src/create-baton.ts';
import type { JobSpec } from '../../src/types/job.ts';
import { jobRow } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { baton, claim, ex, expectBatonError, fresh, jobCount, ms, newJob, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('jobInsertMany', () => {
  it('writes each spec as a pending row, in input order; run_at as given or now() + delayMs; a taken key answers the stored job', async () => {
    const queue = fresh();
    const key = `${queue}-k`;
    const at = '2030-01-02T03:04:05.678Z';
    const res = await ex.jobInsertMany({
      jobs: [
        newJob({
          queue,
          tenantId: 't-ins',
          jobType: 'ins.a',
          payload: { n: 1 },
          priority: 4,
          maxAttempts: 9,
          idempotencyKey: key,
          delayMs: 2_500,
        }),
        newJob({ queue, runAt: at, delayMs: null }),
        newJob({ queue, payload: undefined }),
        newJob({ queue, tenantId: 't-ins', idempotencyKey: key, payload: { n: 2 } }),
      ],
    });
    expect(res.map((r) => r.created)).toEqual([true, true, true, false]);
    const ids = res.slice(0, 3).map((r) => r.job.id);
    expect(ids.map(BigInt)).toEqual(ids.map(BigInt).sort((a, b) => (a < b ? -1 : 1)));
    expect(res[3]!.job).toEqual(res[0]!.job);

    const [a, b, c] = await Promise.all(ids.map(row));
    expect(a).toMatchObject({
      state: 'pending',
      tenant_id: 't-ins',
      queue,
      job_type: 'ins.a',
      payload: { n: 1 },
      priority: 4,
      max_attempts: 9,
      idempotency_key: key,
      attempt: 0,
      lease_token: null,
      lease_owner: null,
      lease_expires_at: null,
      started_at: null,
      finished_at: null,
      errors: [],
      last_error: null,
      result: null,
      replay_count: 0,
    });
    // delayMs counts from the insert's own now() (database clock).
    expect(ms(a!.run_at, a!.created_at)).toBe(2_500);
    expect(a!.updated_at).toEqual(a!.created_at);
    expect(b!.run_at.toISOString()).toBe(at);
    expect(c).toMatchObject({ payload: null, idempotency_key: null });
    // The answer is the row as stored.
    expect(res[0]!.job).toMatchObject({
      id: a!.id,
      state: 'pending',
      lastToken: null,
      runAt: a!.run_at,
      createdAt: a!.created_at,
      updatedAt: a!.updated_at,
    });
    const stored = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1`, [queue]);
    expect(stored.rows[0].n).toBe(3);
  });
});

describe('enqueue', () => {
  it('resolves delayMs on the database clock and stores the spec', async () => {
    const queue = fresh();
    const { job, created } = await baton.enqueue({
      jobType: 'mail.send',
      queue,
      payload: { to: 'a@b' },
      priority: 3,
      delayMs: 45_000,
      maxAttempts: 7,
    });
    expect(created).toBe(true);
    const r = await row(job.id);
    expect(r).toMatchObject({
      state: 'pending',
      queue,
      job_type: 'mail.send',
      payload: { to: 'a@b' },
      priority: 3,
      max_attempts: 7,
      attempt: 0,
    });
    expect(ms(r.run_at, r.created_at)).toBe(45_000);
    expect(await claim(queue, 1)).toEqual([]);
  });

  it('idempotency key per tenant: same tenant -> one job, other tenant -> its own job', async () => {
    const spec: JobSpec = { jobType: 'k.test', queue: fresh(), idempotencyKey: 'order-1', payload: { n: 1 } };
    const first = await baton.enqueue(spec);
    const dup = await baton.enqueue({ ...spec, payload: { n: 2 } });
    expect(first.created).toBe(true);
    expect(dup).toMatchObject({ created: false, job: { id: first.job.id, payload: { n: 1 } } });
    const other = await baton.enqueue({ ...spec, tenantId: 'acme' });
    expect(other.created).toBe(true);
    expect(other.job.id).not.toBe(first.job.id);
    const rows = await db.query(`SELECT tenant_id FROM baton.jobs WHERE idempotency_key = 'order-1' ORDER BY tenant_id`);
    expect(rows.rows.map((r) => r.tenant_id)).toEqual(['acme', 'default']);
  });

  it('a key repeated inside one batch creates one job; results keep input order', async () => {
    const queue = fresh();
    const existing = await baton.enqueue({ jobType: 'b.test', queue, idempotencyKey: 'pre' });
    const res = await baton.enqueueMany([
      { jobType: 'b.test', queue, payload: 'u1' },
      { jobType: 'b.test', queue, idempotencyKey: 'k', payload: 'k-first' },
      { jobType: 'b.test', queue, idempotencyKey: 'pre', payload: 'ignored' },
      { jobType: 'b.test', queue, idempotencyKey: 'k', payload: 'k-second' },
      { jobType: 'b.test', queue, payload: 'u2' },
    ]);
    expect(res.map((r) => r.created)).toEqual([true, true, false, false, true]);
    expect(res.map((r) => r.job.payload)).toEqual(['u1', 'k-first', null, 'k-first', 'u2']);
    expect(res[2]!.job.id).toBe(existing.job.id);
    expect(res[3]!.job.id).toBe(res[1]!.job.id);
    const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1`, [queue]);
    expect(n.rows[0].n).toBe(4);
  });

  it('a large mixed batch maps every result to its own spec', async () => {
    const queue = fresh();
    const specs: JobSpec[] = Array.from({ length: 600 }, (_, i) => ({
      jobType: 'big.batch',
      queue,
      payload: { i },
      ...(i % 7 === 0 ? { idempotencyKey: `big-${i % 21}` } : {}),
    }));
    const res = await baton.enqueueMany(specs);
    expect(res).toHaveLength(600);
    res.forEach((r, i) => {
      const key = specs[i]!.idempotencyKey;
      // A repeated key returns the job of its first occurrence.
      const first = key === undefined ? i : specs.findIndex((s) => s.idempotencyKey === key);
      expect(r.job.payload).toEqual({ i: first });
      expect(r.created).toBe(first === i);
    });
    const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1`, [queue]);
    expect(n.rows[0].n).toBe(res.filter((r) => r.created).length);
  });

  it('20 concurrent duplicate enqueues on separate connections create exactly one job', async () => {
    const producer = createBaton({ connectionString: db.url, poolSize: 20 });
    try {
      for (let round = 0; round < 3; round++) {
        const key = `concurrent-${round}`;
        const spec: JobSpec = { jobType: 'c.test', queue: fresh(), idempotencyKey: key, tenantId: 'dup' };
        const results = await Promise.all(Array.from({ length: 20 }, () => producer.enqueue(spec)));
        expect(new Set(results.map((r) => r.job.id)).size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE tenant_id = 'dup' AND idempotency_key = $1`, [key]);
        expect(n.rows[0].n).toBe(1);
      }
      // The duplicates really raced on separate sessions.
      const sessions = await db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'baton'`,
      );
      expect(sessions.rows[0].n).toBeGreaterThanOrEqual(10);
    } finally {
      await producer.stop();
    }
  });
});

describe("transactional enqueue on the caller's client", () => {
  /** The caller's client, recording every statement text Baton sends on it. */
  async function callerClient() {
    const client = await db.pool.connect();
    const sent: string[] = [];
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    const spy = (...args: unknown[]) => {
      const c = args[0];
      sent.push(typeof c === 'string' ? c : String((c as { text?: string }).text));
      return query(...args);
    };
    return { client, sent, baton: spy as unknown as pg.PoolClient['query'] };
  }
  const CONTROL = /^\s*(BEGIN|START|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|ABORT|PREPARE)\b/i;

  it('ROLLBACK leaves no job, COMMIT makes it claimable; Baton never ends the transaction', async () => {
    const queue = fresh();
    const listener = new pg.Client({ connectionString: db.url });
    const heard: string[] = [];
    await listener.connect();
    listener.on('notification', (n) => heard.push(n.channel));
    await listener.query(`LISTEN ${channelFor('baton', queue)}`);
    const { client, sent, baton: spyQuery } = await callerClient();
    const onClient = { query: spyQuery } as unknown as pg.PoolClient;
    try {
      await client.query('BEGIN');
      const rolled = await baton.enqueue({ jobType: 'tx.test', queue, payload: 'rolled back' }, { client: onClient });
      // Still inside the caller's transaction, which has written.
      expect((await client.query('SELECT txid_current_if_assigned() AS x')).rows[0].x).not.toBeNull();
      expect(await jobRow(db.pool, rolled.job.id)).toBeUndefined(); // invisible to others before commit
      await client.query('ROLLBACK');
      expect(await jobRow(db.pool, rolled.job.id)).toBeUndefined();
      expect(await claim(queue, 10)).toEqual([]);

      await client.query('BEGIN');
      const kept = await baton.enqueue({ jobType: 'tx.test', queue, payload: 'committed' }, { client: onClient });
      expect((await client.query('SELECT txid_current_if_assigned() AS x')).rows[0].x).not.toBeNull();
      expect(await claim(queue, 10)).toEqual([]);
      await client.query('COMMIT');
      expect((await claim(queue, 10)).map((j) => j.id)).toEqual([kept.job.id]);

      expect(sent.length).toBeGreaterThan(0);
      expect(sent.filter((s) => CONTROL.test(s))).toEqual([]);
      // The wake-up NOTIFY travelled with the transaction: only the committed one arrives.
      await waitFor(() => heard.length > 0, { message: "the committed enqueue's NOTIFY" });
      expect(heard).toEqual([channelFor('baton', queue)]);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      await listener.end();
    }
  });

  it("a batch on the caller's client rolls back as a whole", async () => {
    const queue = fresh();
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const res = await baton.enqueueMany(
        [
          { jobType: 'tx.batch', queue },
          { jobType: 'tx.batch', queue, idempotencyKey: 'tx-k' },
        ],
        { client },
      );
      expect(res.every((r) => r.created)).toBe(true);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1`, [queue]);
    expect(n.rows[0].n).toBe(0);
    // The rolled-back key is free again.
    expect((await baton.enqueue({ jobType: 'tx.batch', queue, idempotencyKey: 'tx-k' })).created).toBe(true);
  });
});

describe('bad input', () => {
  it.each<[string, JobSpec]>([
    ['NUL in payload string', { jobType: 'bad.nul', payload: { s: 'a\u0000b' } }],
    ['NUL in payload key', { jobType: 'bad.nul', payload: { 'k\u0000': 1 } }],
    ['NUL after a literal backslash', { jobType: 'bad.nul', payload: ['\\\u0000'] }],
    ['NUL in jobType', { jobType: 'bad\u0000nul' }],
    ['NUL in idempotencyKey', { jobType: 'bad.nul', idempotencyKey: 'k\u0000' }],
    ['NUL in tenantId', { jobType: 'bad.nul', tenantId: 't\u0000' }],
    ['queue with a space', { jobType: 'bad.name', queue: 'has space' }],
    ['empty jobType', { jobType: '' }],
    ['129-char jobType', { jobType: 'x'.repeat(129) }],
    ['queue "/"', { jobType: 'bad.name', queue: '/' }],
    ['queue with a doubled slash', { jobType: 'bad.name', queue: 'a//b' }],
    ['jobType with a leading slash', { jobType: '/bad.name' }],
    ['tenantId with a trailing slash', { jobType: 'bad.name', tenantId: 't/' }],
    ['runAt and delayMs together', { jobType: 'bad.time', runAt: new Date(), delayMs: 10 }],
    ['invalid runAt', { jobType: 'bad.time', runAt: new Date(Number.NaN) }],
    ['negative delayMs', { jobType: 'bad.time', delayMs: -1 }],
    ['maxAttempts 0', { jobType: 'bad.attempts', maxAttempts: 0 }],
    ['fractional priority', { jobType: 'bad.prio', priority: 1.5 }],
    ['unknown field', { jobType: 'bad.field', queueName: 'x' } as unknown as JobSpec],
  ])('%s -> INVALID_ARGUMENT, no row written', async (_what, spec) => {
    const before = await jobCount();
    await expectBatonError(baton.enqueue(spec), 'INVALID_ARGUMENT');
    expect(await jobCount()).toBe(before);
  });

  it('a runAt outside years 0001..9999 (UTC) is refused before any SQL, naming runAt; the bounds themselves are stored', async () => {
    const before = await jobCount();
    // Valid-looking text whose offset carries it past a bound.
    for (const text of ['9999-12-31T23:00:00-01:00', '0001-01-01T00:30:00+01:00']) {
      const runAt = new Date(text);
      const one = await expectBatonError(baton.enqueue({ jobType: 'bad.time', runAt }), 'INVALID_ARGUMENT');
      expect(one.message).toMatch(/^invalid job: runAt: must be from 0001-01-01T00:00:00\.000Z to 9999-12-31T23:59:59\.999Z/);
      const many = await expectBatonError(baton.enqueueMany([{ jobType: 'ok.one' }, { jobType: 'bad.time', runAt }]), 'INVALID_ARGUMENT');
      expect(many.message).toContain('jobs[1].runAt: must be from');
    }
    expect(await jobCount()).toBe(before);
    for (const iso of [RUN_AT_MIN, RUN_AT_MAX]) {
      const { job } = await baton.enqueue({ jobType: 'ok.bound', runAt: new Date(iso) });
      expect((await row(job.id)).run_at.toISOString()).toBe(iso);
    }
  });

  it('accepts the six-character text \\u0000 (a backslash, no NUL) and stores it verbatim', async () => {
    const payload = { path: String.raw`C:\u0000dir`, nested: [String.raw`\\\u0000`] };
    const { job } = await baton.enqueue({ jobType: 'ok.backslash', payload, idempotencyKey: String.raw`key\u0000` });
    expect((await row(job.id)).payload).toEqual(payload);
  });

  it('one bad spec rejects the whole batch, naming its index', async () => {
    const before = await jobCount();
    const err = await expectBatonError(
      baton.enqueueMany([{ jobType: 'ok.one' }, { jobType: 'ok.two', maxAttempts: 0 }]),
      'INVALID_ARGUMENT',
    );
    expect(err.message).toContain('jobs[1].maxAttempts');
    expect(await jobCount()).toBe(before);
  });

  it('a payload that cannot be serialised is INVALID_ARGUMENT', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expectBatonError(baton.enqueue({ jobType: 'bad.json', payload: cyclic }), 'INVALID_ARGUMENT');
    await expectBatonError(baton.enqueue({ jobType: 'bad.json', payload: 10n }), 'INVALID_ARGUMENT');
  });

  it('the executor itself turns NUL bytes the database rejects into INVALID_ARGUMENT, writing nothing', async () => {
    const before = await jobCount();
    for (const job of [
      newJob({ payload: { s: 'x\u0000' } }),
      newJob({ jobType: 'nul\u0000type' }),
      newJob({ idempotencyKey: 'k\u0000' }),
    ]) {
      await expectBatonError(ex.jobInsertMany({ jobs: [newJob(), job] }), 'INVALID_ARGUMENT');
    }
    expect(await jobCount()).toBe(before);
  });

  it('every data exception the database raises (class 22, here 22009) is INVALID_ARGUMENT, not INTERNAL', async () => {
    const before = await jobCount();
    // Year 10000 written the way Date#toISOString writes it: PostgreSQL reads "+010000" as a
    // time zone displacement and refuses it with 22009, a code no list of codes had named.
    const err = await expectBatonError(ex.jobInsertMany({ jobs: [newJob({ runAt: '+010000-01-01T00:00:00.000Z' })] }), 'INVALID_ARGUMENT');
    expect(err.details).toEqual({ sqlstate: '22009' });
    expect(await jobCount()).toBe(before);
  });
});
