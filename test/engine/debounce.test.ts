// Debounce and throttle by key through the public API, against the file's database: a trailing
// debounce folds enqueues into the key's pending job (last payload, run_at pushed, bounded by
// maxWaitMs); a leading one drops within its window; a throttle creates at most `limit` jobs per
// window; concurrent enqueues of one key from several engines leave exactly one pending job; a
// claimed job is no longer debounced; a plain enqueue sends no statement of the feature; a
// created job due now is announced at the caller's commit.
// Windows are moved by writing the key's row (as time passing would), never by sleeping.

import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isBatonError, type JobContext, type JobSpec } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { namingPool } from '../helpers/statement-names.ts';
import { Signal, waitFor } from '../helpers/wait.ts';
import { useEngines } from './harness.ts';

const db = useTestDatabase();

const pendingOf = async (queue: string) =>
  (
    await db.query<{ id: string; payload: unknown; run_at: Date; created_at: Date; now: Date }>(
      `SELECT id::text, payload, run_at, created_at, now() AS now FROM baton.jobs WHERE queue = $1 AND state = 'pending' ORDER BY jobs.id`,
      [queue],
    )
  ).rows;
/** Numbered specs of job type sync in `queue` under `rule`. */
const specOf =
  (queue: string, rule: Pick<JobSpec, 'debounce' | 'throttle'>) =>
  (n: number): JobSpec => ({ jobType: 'sync', queue, payload: { n }, ...rule });
/** How far ahead of the database clock a job's run_at lies, in ms. */
const ahead = (j: { run_at: Date; now: Date }) => j.run_at.getTime() - j.now.getTime();
/** Moves the key's window `ms` into the past, as if that much time had gone by. */
const age = (key: string, ms: number) =>
  db.query(
    `UPDATE baton.job_windows SET opened_at = opened_at - make_interval(secs => $2 / 1000.0),
       until_at = until_at - make_interval(secs => $2 / 1000.0) WHERE key = $1`,
    [key, ms],
  );

/** Pools a test made itself, ended after its engines stopped. */
const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});

describe('debounce and throttle by key', () => {
  const engines = useEngines(db);
  beforeEach(async () => {
    await db.query('TRUNCATE baton.job_windows');
  });
  const trailing = (payload: unknown, extra: Partial<NonNullable<JobSpec['debounce']>> = {}): JobSpec => ({
    jobType: 'sync',
    queue: 'tq',
    payload,
    debounce: { key: 'user:1', windowMs: 60_000, ...extra },
  });

  it('trailing: a later enqueue replaces the pending job’s payload and pushes its run_at; the answer names the one job', async () => {
    const b = engines.producer();
    const first = await b.enqueue(trailing({ n: 1 }));
    expect(first).toMatchObject({ created: true });
    expect(first.collapsedBy).toBeUndefined();
    const [before] = await pendingOf('tq');
    // The window runs from the enqueue: run_at is windowMs ahead of the database clock.
    expect(ahead(before!)).toBeGreaterThan(59_000);
    expect(ahead(before!)).toBeLessThanOrEqual(60_000);
    await age('user:1', 5_000);
    await db.query(`UPDATE baton.jobs SET run_at = run_at - interval '5 seconds' WHERE id = $1`, [first.job.id]);
    const second = await b.enqueue(trailing({ n: 2 }));
    expect(second).toMatchObject({ created: false, collapsedBy: 'debounce', job: { id: first.job.id, payload: { n: 2 } } });
    const after = await pendingOf('tq');
    expect(after).toHaveLength(1);
    expect(after[0]!.payload).toEqual({ n: 2 });
    // Pushed to the second enqueue's now + window (5 s later than the first's end).
    expect(ahead(after[0]!)).toBeGreaterThan(59_000);
    expect(after[0]!.run_at.getTime()).toBeGreaterThan(before!.run_at.getTime());
    const got = await b.admin.getJob(first.job.id);
    expect(got.enqueueWindow).toEqual({ kind: 'debounce', key: 'user:1', windowMs: 60_000, mode: 'trailing', maxWaitMs: null });
  });

  it('trailing with maxWaitMs: run_at never moves past maxWaitMs after the enqueue that created the job', async () => {
    const b = engines.producer();
    const spec = (n: number) => trailing({ n }, { windowMs: 10_000, maxWaitMs: 15_000 });
    const first = await b.enqueue(spec(1));
    // 12 s into the burst: now + window would be 22 s after its start; maxWait caps it at 15 s.
    await age('user:1', 12_000);
    const second = await b.enqueue(spec(2));
    expect(second).toMatchObject({ created: false, collapsedBy: 'debounce', job: { id: first.job.id } });
    const [job] = await pendingOf('tq');
    const opened = (await db.query<{ opened_at: Date }>(`SELECT opened_at FROM baton.job_windows WHERE key = 'user:1'`)).rows[0]!.opened_at;
    expect(job!.run_at.getTime()).toBe(opened.getTime() + 15_000);
    expect(ahead(job!)).toBeGreaterThan(2_000);
    expect(ahead(job!)).toBeLessThanOrEqual(3_000);
    // Past maxWait (the workers are behind), a fold makes the job due now, not later.
    await age('user:1', 10_000);
    await b.enqueue(spec(3));
    const [due] = await pendingOf('tq');
    expect(ahead(due!)).toBeLessThanOrEqual(0);
    expect(ahead(due!)).toBeGreaterThan(-1_000);
    expect(due!.payload).toEqual({ n: 3 });
  });

  it('leading: the first enqueue runs at once, later ones within the window are dropped, and the window closes after it', async () => {
    const b = engines.producer();
    const lead = specOf('lq', { debounce: { key: 'k', windowMs: 30_000, mode: 'leading' } });
    const first = await b.enqueue(lead(1));
    expect(first.created).toBe(true);
    const [job] = await pendingOf('lq');
    expect(ahead(job!)).toBeLessThanOrEqual(0);
    const dropped = await b.enqueue(lead(2));
    expect(dropped).toMatchObject({ created: false, collapsedBy: 'debounce', job: { id: first.job.id, payload: { n: 1 } } });
    expect(await pendingOf('lq')).toHaveLength(1);
    // A drop pushes the window: 20 s later one more enqueue is still in it (30 s after the last drop).
    await age('k', 20_000);
    expect((await b.enqueue(lead(3))).created).toBe(false);
    await age('k', 31_000);
    const next = await b.enqueue(lead(4));
    expect(next.created).toBe(true);
    expect(next.job.id).not.toBe(first.job.id);
    expect((await pendingOf('lq')).map((j) => j.payload)).toEqual([{ n: 1 }, { n: 4 }]);
  });

  it('leading with maxWaitMs: a steady stream creates a new job once maxWaitMs has passed since the last one', async () => {
    const b = engines.producer();
    const lead = specOf('lm', { debounce: { key: 'k', windowMs: 10_000, mode: 'leading', maxWaitMs: 20_000 } });
    const first = await b.enqueue(lead(1));
    await age('k', 9_000);
    expect((await b.enqueue(lead(2))).created).toBe(false);
    await age('k', 9_000);
    expect((await b.enqueue(lead(3))).created).toBe(false);
    // 27 s after the first job with drops every 9 s: past maxWait, a new job.
    await age('k', 9_000);
    const next = await b.enqueue(lead(4));
    expect(next.created).toBe(true);
    expect(next.job.id).not.toBe(first.job.id);
  });

  it('throttle: at most `limit` jobs per window; the rest are dropped with the last job; a new window creates again', async () => {
    const b = engines.producer();
    const t = specOf('thq', { throttle: { key: 'api', windowMs: 60_000, limit: 2 } });
    const r = [];
    for (let n = 1; n <= 4; n++) r.push(await b.enqueue(t(n)));
    expect(r.map((x) => x.created)).toEqual([true, true, false, false]);
    expect(r[2]).toMatchObject({ collapsedBy: 'throttle', job: { id: r[1]!.job.id } });
    expect(r[3]!.job.id).toBe(r[1]!.job.id);
    expect((await pendingOf('thq')).map((j) => j.payload)).toEqual([{ n: 1 }, { n: 2 }]);
    // The window is fixed from its first job: drops do not extend it.
    await age('api', 60_001);
    const later = await b.enqueue(t(5));
    expect(later.created).toBe(true);
    expect((await b.admin.getJob(later.job.id)).enqueueWindow).toEqual({ kind: 'throttle', key: 'api', windowMs: 60_000, limit: 2 });
  });

  it('keys are per tenant and queue: the same key elsewhere is another key', async () => {
    const b = engines.producer();
    const spec = (queue: string, tenantId: string): JobSpec => ({
      jobType: 'sync',
      queue,
      tenantId,
      debounce: { key: 'same', windowMs: 60_000 },
    });
    const results = [await b.enqueue(spec('q1', 'a')), await b.enqueue(spec('q1', 'b')), await b.enqueue(spec('q2', 'a'))];
    expect(results.map((r) => r.created)).toEqual([true, true, true]);
  });

  it('concurrent enqueues of one key from several engines leave exactly one pending job, which every answer names', async () => {
    const producers = [1, 2, 3, 4].map(() => engines.producer({ poolSize: 4 }));
    const answers = await Promise.all(
      producers.flatMap((b, p) => Array.from({ length: 25 }, (_, i) => b.enqueue(trailing({ p, i }, { key: 'hot' })))),
    );
    const pending = await pendingOf('tq');
    expect(pending).toHaveLength(1);
    expect(new Set(answers.map((a) => a.job.id))).toEqual(new Set([pending[0]!.id]));
    expect(answers.filter((a) => a.created)).toHaveLength(1);
    // The stored payload is one a fold wrote and answered (which one is the last commit's).
    expect(answers.map((a) => a.job.payload)).toContainEqual(pending[0]!.payload);
    // Leading and throttle under the same race: exactly one job created.
    const lead = await Promise.all(
      producers.flatMap((b) =>
        Array.from({ length: 10 }, () =>
          b.enqueue({ jobType: 'sync', queue: 'race', debounce: { key: 'l', windowMs: 60_000, mode: 'leading' } }),
        ),
      ),
    );
    expect(lead.filter((a) => a.created)).toHaveLength(1);
    const thr = await Promise.all(
      producers.flatMap((b) =>
        Array.from({ length: 10 }, () => b.enqueue({ jobType: 'sync', queue: 'race', throttle: { key: 't', windowMs: 60_000, limit: 3 } })),
      ),
    );
    expect(thr.filter((a) => a.created)).toHaveLength(3);
  });

  it('a claimed job is no longer debounced: the next enqueue creates a new pending job', async () => {
    const gate = engines.gate();
    const entered = new Signal<JobContext>();
    const b = await engines.start({
      queues: { tq: 1 },
      pollIntervalMs: 50,
      handlers: {
        sync: async (ctx) => {
          entered.emit(ctx);
          await gate.promise;
        },
      },
    });
    const first = await b.enqueue(trailing({ n: 1 }, { windowMs: 1 }));
    const ctx = await entered.next({ message: 'the debounced job to be claimed once its window closed' });
    expect(ctx.job.id).toBe(first.job.id);
    expect(ctx.job.payload).toEqual({ n: 1 });
    const second = await b.enqueue(trailing({ n: 2 }, { windowMs: 60_000 }));
    expect(second.created).toBe(true);
    expect(second.job.id).not.toBe(first.job.id);
    expect((await pendingOf('tq')).map((j) => j.payload)).toEqual([{ n: 2 }]);
    gate.resolve();
    await waitFor(async () => (await b.admin.getJob(first.job.id)).state === 'succeeded', { message: 'the first job to finish' });
  });

  it('a plain enqueue sends no statement of the feature; a windowed one only its own', async () => {
    // Every named statement the producer's pool sends, on pool.query or on a checked-out client.
    const { pool, names } = namingPool(db.url);
    pools.push(pool);
    const b = engines.producer({ pool });
    await b.enqueue({ jobType: 'plain', queue: 'p' });
    await b.enqueueMany([
      { jobType: 'plain', queue: 'p' },
      { jobType: 'plain', queue: 'p' },
    ]);
    expect(names.filter((n) => /job_insert/.test(n)).length).toBeGreaterThanOrEqual(2);
    expect(names.filter((n) => /job_window/.test(n))).toEqual([]);
    await b.enqueue(trailing({ n: 1 }));
    expect(names.filter((n) => /job_window/.test(n))).toEqual([
      '"baton".job_window_lock',
      '"baton".job_window_insert',
      '"baton".job_window_write',
    ]);
  });

  it('a batch mixes plain and windowed specs, answered in input order', async () => {
    const b = engines.producer();
    const out = await b.enqueueMany([
      { jobType: 'plain', queue: 'tq' },
      trailing({ n: 1 }),
      trailing({ n: 2 }),
      { jobType: 'plain', queue: 'tq' },
    ]);
    expect(out.map((r) => [r.job.jobType, r.created, r.collapsedBy])).toEqual([
      ['plain', true, undefined],
      ['sync', true, undefined],
      ['sync', false, 'debounce'],
      ['plain', true, undefined],
    ]);
    expect(out[2]!.job.id).toBe(out[1]!.job.id);
  });

  it("in the caller's transaction: a rollback leaves neither the job nor the key's row", async () => {
    const b = engines.producer();
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const r = await b.enqueue(trailing({ n: 1 }), { client });
      expect(r.created).toBe(true);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await pendingOf('tq')).toEqual([]);
    expect((await db.query('SELECT 1 FROM baton.job_windows')).rowCount).toBe(0);
    expect((await b.enqueue(trailing({ n: 2 }))).created).toBe(true);
  });

  it("a created leading or throttled job due now wakes another process's worker at the caller's commit", async () => {
    // Polling once a minute: only the NOTIFY can get the jobs claimed within the wait.
    const ran = new Signal<string>();
    await engines.start({ queues: { wake: 1 }, pollIntervalMs: 60_000, handlers: { sync: (ctx) => ran.emit(ctx.job.id) } });
    const b = engines.producer();
    const client = await db.pool.connect();
    let ids: string[];
    try {
      // The transaction starts (created_at) well before the key's lock reads the clock (run_at).
      await client.query('BEGIN');
      await client.query('SELECT pg_sleep(0.05)');
      const leading = await b.enqueue({ ...specOf('wake', { debounce: { key: 'l', windowMs: 60_000, mode: 'leading' } })(1) }, { client });
      const throttled = await b.enqueue({ ...specOf('wake', { throttle: { key: 't', windowMs: 60_000 } })(2) }, { client });
      ids = [leading.job.id, throttled.job.id];
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const seen = [await ran.next({ message: 'a job woken by the NOTIFY' }), await ran.next({ message: 'the other job' })];
    expect(seen.sort()).toEqual(ids.sort());
  });

  it('refuses bad rules and combinations with INVALID_ARGUMENT naming the field', async () => {
    const b = engines.producer();
    const bad: Array<[JobSpec, RegExp]> = [
      [{ jobType: 'x', debounce: { key: '', windowMs: 10 } }, /debounce\.key/],
      [{ jobType: 'x', debounce: { key: 'k', windowMs: 0 } }, /debounce\.windowMs/],
      [{ jobType: 'x', debounce: { key: 'k', windowMs: 100, maxWaitMs: 50 } }, /debounce\.maxWaitMs/],
      [{ jobType: 'x', debounce: { key: 'k', windowMs: 10, mode: 'middle' as never } }, /debounce\.mode/],
      [{ jobType: 'x', debounce: { key: 'k', windowMs: 10 }, throttle: { key: 'k', windowMs: 10 } }, /throttle: debounce and throttle/],
      [{ jobType: 'x', debounce: { key: 'k', windowMs: 10 }, idempotencyKey: 'i' }, /idempotencyKey/],
      [{ jobType: 'x', throttle: { key: 'k', windowMs: 10 }, dependsOn: ['1'] }, /dependsOn/],
      [{ jobType: 'x', debounce: { key: 'k', windowMs: 10 }, delayMs: 5 }, /delayMs: a trailing debounce/],
      [{ jobType: 'x', throttle: { key: 'k', windowMs: 10, limit: 0 } }, /throttle\.limit/],
    ];
    for (const [spec, message] of bad) {
      const err = await b.enqueue(spec).catch((e: unknown) => e);
      expect(isBatonError(err) && err.code, JSON.stringify(spec)).toBe('INVALID_ARGUMENT');
      expect((err as Error).message).toMatch(message);
    }
    // A leading debounce may be delayed.
    const r = await b.enqueue({ jobType: 'x', queue: 'd', delayMs: 5_000, debounce: { key: 'k', windowMs: 10, mode: 'leading' } });
    expect(r.job.runAt.getTime() - r.job.createdAt.getTime()).toBeGreaterThanOrEqual(5_000);
    expect(r.job.runAt.getTime() - r.job.createdAt.getTime()).toBeLessThan(6_000);
    expect(await db.query('SELECT count(*)::int AS n FROM baton.jobs')).toMatchObject({ rows: [{ n: 1 }] });
  });
});
