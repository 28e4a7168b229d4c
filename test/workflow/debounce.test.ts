// Debounce and throttle of workflow starts, against the file's database: a trailing start folds
// into the key's pending run (its input replaced, the run that executes sees the last one, its
// driving job's run_at pushed and bounded by maxWaitMs); a start after the driving job was
// claimed makes a new run; leading and throttle drop; concurrent starts from two engines make
// one run; a claim holding the driving job beats a fold, and a job back to pending after a claim
// is never folded into, nor a run that would then be due past its deadline; keys of runs are not
// keys of jobs, and the leader sweeps them as it does jobs' keys; a plain start sends no statement of the feature;
// over HTTP 201, 200 with collapsedBy, 400 naming the field; bad options are INVALID_ARGUMENT.
// A run is held pending by starting no worker on its queue; windows are moved by writing the
// key's row and the driving job's run_at (as time passing would), never by sleeping.

import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import { type Baton, isBatonError, type StartRunOptions } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { namingPool } from '../helpers/statement-names.ts';
import { Signal, waitFor } from '../helpers/wait.ts';
import { field, JSON_HEADERS, okJson, startApi } from '../http/harness.ts';
import { jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

/** The runs of workflow `name`, oldest first, with their stored input. */
const runsOf = async (name: string) =>
  (
    await db.query<{ id: string; input: unknown }>(
      'SELECT r.id::text, r.input FROM baton.workflow_runs r WHERE r.name = $1 ORDER BY r.id',
      [name],
    )
  ).rows;
/** The driving job of run `runId` as stored, with the database clock. */
const drivingJob = async (runId: string) =>
  (
    await db.query<{ id: string; state: string; payload: unknown; trace_context: unknown; run_at: Date; now: Date }>(
      `SELECT j.id::text, j.state, j.payload, j.trace_context, j.run_at, now() AS now
       FROM baton.jobs j JOIN baton.workflow_runs r ON r.job_id = j.id WHERE r.id = $1`,
      [runId],
    )
  ).rows[0]!;
/** How far ahead of the database clock a job's run_at lies, in ms. */
const ahead = (j: { run_at: Date; now: Date }) => j.run_at.getTime() - j.now.getTime();
/** Moves every key's window, and every pending job's run_at, `ms` into the past. */
const age = async (ms: number) => {
  await db.query(
    `UPDATE baton.job_windows SET opened_at = opened_at - make_interval(secs => $1 / 1000.0),
       until_at = until_at - make_interval(secs => $1 / 1000.0)`,
    [ms],
  );
  await db.query(`UPDATE baton.jobs SET run_at = run_at - make_interval(secs => $1 / 1000.0) WHERE state = 'pending'`, [ms]);
};
const code = async (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'resolved',
    (err: unknown) => (isBatonError(err) ? `${err.code}: ${err.message}` : String(err)),
  );

/** Pools a test made itself, ended after its engines stopped. */
const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});

describe('debounce and throttle of workflow starts', () => {
  const engines = useWorkflowEngines(db);
  beforeEach(async () => {
    await db.query('TRUNCATE baton.job_windows');
  });
  /** An engine that defines `digest` on queue `wq` (its output: the input it ran with), started only when a test runs it. */
  const withDigest = (b: Baton): Baton => {
    b.workflow<unknown>('digest', (ctx) => ctx.step('seen', () => ctx.input), { queue: 'wq' });
    return b;
  };
  const producer = () => withDigest(engines.create({ queues: {} }));
  const trailing = (extra: Partial<NonNullable<StartRunOptions['debounce']>> = {}): StartRunOptions => ({
    debounce: { key: 'user:1', windowMs: 60_000, ...extra },
  });

  it('trailing: later starts replace the pending run’s input and push its start; the run that executes sees the last input', async () => {
    const p = producer();
    const trace = (n: number) => ({ traceparent: `00-${String(n).padStart(32, '0')}-${'1'.padStart(16, '0')}-01` });
    const first = await p.startWorkflow('digest', { n: 1 }, { ...trailing(), traceContext: trace(1) });
    expect(first).toMatchObject({ duplicate: false });
    expect(first.collapsedBy).toBeUndefined();
    const before = await drivingJob(first.run.id);
    // The run starts when the window ends: windowMs ahead of the database clock.
    expect(ahead(before)).toBeGreaterThan(59_000);
    expect(ahead(before)).toBeLessThanOrEqual(60_000);
    await age(5_000);
    const second = await p.startWorkflow('digest', { n: 2 }, { ...trailing(), traceContext: trace(2) });
    const third = await p.startWorkflow('digest', { n: 3 }, { ...trailing(), traceContext: trace(3) });
    for (const r of [second, third]) expect(r).toMatchObject({ run: { id: first.run.id }, duplicate: false, collapsedBy: 'debounce' });
    expect(await runsOf('digest')).toEqual([{ id: first.run.id, input: { n: 3 } }]);
    const after = await drivingJob(first.run.id);
    expect(after).toMatchObject({ id: before.id, state: 'pending', payload: { runId: first.run.id }, trace_context: trace(3) });
    // The run keeps the trace too (a replay's new driving job takes it from there).
    const runTrace = await db.query('SELECT trace_context FROM baton.workflow_runs WHERE id = $1', [first.run.id]);
    expect(runTrace.rows[0].trace_context).toEqual(trace(3));
    // Pushed to the last start's now + window: 5 s later than the first start's end.
    expect(ahead(after)).toBeGreaterThan(59_000);
    expect(after.run_at.getTime()).toBeGreaterThan(before.run_at.getTime());
    expect((await p.admin.getJob(before.id)).enqueueWindow).toEqual({
      kind: 'debounce',
      key: 'user:1',
      windowMs: 60_000,
      mode: 'trailing',
      maxWaitMs: null,
    });

    // The window ends (as if a minute went by) and a worker runs the one run: with the last input.
    await age(61_000);
    const worker = withDigest(engines.create({ queues: { wq: 1 } }));
    await worker.start();
    const done = await runInState(worker, first.run.id, 'succeeded');
    expect(done.input).toEqual({ n: 3 });
    expect(done.output).toEqual({ n: 3 });
    expect(await runsOf('digest')).toHaveLength(1);
  });

  it('trailing with maxWaitMs: the run’s start never moves past maxWaitMs after the start that created it', async () => {
    const p = producer();
    const opts = trailing({ windowMs: 10_000, maxWaitMs: 15_000 });
    const first = await p.startWorkflow('digest', { n: 1 }, opts);
    // 12 s into the burst: now + window would be 22 s after its first start; maxWait caps it at 15 s.
    await age(12_000);
    expect(await p.startWorkflow('digest', { n: 2 }, opts)).toMatchObject({ run: { id: first.run.id }, collapsedBy: 'debounce' });
    const opened = (await db.query<{ opened_at: Date }>(`SELECT opened_at FROM baton.job_windows WHERE key = 'user:1'`)).rows[0]!.opened_at;
    const job = await drivingJob(first.run.id);
    expect(job.run_at.getTime()).toBe(opened.getTime() + 15_000);
    expect(ahead(job)).toBeGreaterThan(2_000);
    expect(ahead(job)).toBeLessThanOrEqual(3_000);
    // Past maxWait (the workers are behind), a fold makes the run due now, not later.
    await age(10_000);
    await p.startWorkflow('digest', { n: 3 }, opts);
    const due = await drivingJob(first.run.id);
    expect(ahead(due)).toBeLessThanOrEqual(0);
    expect(ahead(due)).toBeGreaterThan(-1_000);
    expect(await runsOf('digest')).toEqual([{ id: first.run.id, input: { n: 3 } }]);
  });

  it('a start after the driving job was claimed creates a new run; the claimed one keeps its input', async () => {
    const gate = engines.gate();
    const entered = new Signal<unknown>();
    const worker = engines.create({ queues: { hq: 1 } });
    worker.workflow<unknown>(
      'held',
      (ctx) =>
        ctx.step('hold', async () => {
          entered.emit(ctx.input);
          await gate.promise;
          return ctx.input;
        }),
      { queue: 'hq' },
    );
    await worker.start();
    const first = await worker.startWorkflow('held', { n: 1 }, trailing({ windowMs: 1 }));
    expect(await entered.next({ message: 'the debounced run to start once its window closed' })).toEqual({ n: 1 });
    const second = await worker.startWorkflow('held', { n: 2 }, trailing({ windowMs: 60_000 }));
    expect(second.collapsedBy).toBeUndefined();
    expect(second.run.id).not.toBe(first.run.id);
    expect(await runsOf('held')).toEqual([
      { id: first.run.id, input: { n: 1 } },
      { id: second.run.id, input: { n: 2 } },
    ]);
    expect((await jobOf(db, second.run.id)).state).toBe('pending');
    gate.resolve();
    expect((await runInState(worker, first.run.id, 'succeeded')).output).toEqual({ n: 1 });
    // The new run is the key's now: a start folds into it.
    const third = await worker.startWorkflow('held', { n: 3 }, trailing({ windowMs: 60_000 }));
    expect(third).toMatchObject({ run: { id: second.run.id }, collapsedBy: 'debounce' });
  });

  it('a claim that locked the driving job first wins: the fold waiting on it matches nothing and the start creates a new run', async () => {
    const p = producer();
    const first = await p.startWorkflow('digest', { n: 1 }, trailing());
    const job = await drivingJob(first.run.id);
    // A claim in flight: the driving job's row locked and given a lease token, not yet committed.
    const claim = await db.pool.connect();
    try {
      await claim.query('BEGIN');
      await claim.query(`UPDATE baton.jobs SET lease_token = 424242 WHERE id = $1`, [job.id]);
      const second = p.startWorkflow('digest', { n: 2 }, trailing());
      // The fold holds the run row and waits for the job row.
      await waitFor(
        async () =>
          (
            await db.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                 AND query LIKE '%SET input = $2::jsonb%'`,
            )
          ).rowCount === 1,
        { message: 'the fold to wait for the claimed job row' },
      );
      await claim.query('COMMIT');
      const r = await second;
      expect(r.collapsedBy).toBeUndefined();
      expect(r.run.id).not.toBe(first.run.id);
    } finally {
      claim.release();
    }
    expect(await runsOf('digest')).toEqual([
      { id: first.run.id, input: { n: 1 } },
      { id: expect.any(String), input: { n: 2 } },
    ]);
    expect((await drivingJob(first.run.id)).run_at).toEqual(job.run_at);
  });

  it('a driving job back to pending after a claim (a retry, a sleep: it keeps its lease token) is never folded into', async () => {
    const p = producer();
    const first = await p.startWorkflow('digest', { n: 1 }, trailing());
    const job = await drivingJob(first.run.id);
    // As a retry or a suspend leaves it: pending again, with the token of the claim that ran it.
    await db.query(`UPDATE baton.jobs SET lease_token = 4242, attempt = 1 WHERE id = $1`, [job.id]);
    const second = await p.startWorkflow('digest', { n: 2 }, trailing());
    expect(second.collapsedBy).toBeUndefined();
    expect(second.run.id).not.toBe(first.run.id);
    expect(await runsOf('digest')).toEqual([
      { id: first.run.id, input: { n: 1 } },
      { id: second.run.id, input: { n: 2 } },
    ]);
    expect(await drivingJob(first.run.id)).toMatchObject({ state: 'pending', run_at: job.run_at, trace_context: job.trace_context });
  });

  it('trailing: a start never folds into a run that would be due past its deadline; it creates a new run', async () => {
    const p = producer();
    const opts = { ...trailing(), runTimeoutMs: 3_600_000 };
    const first = await p.startWorkflow('digest', { n: 1 }, opts);
    // Due within its deadline: the start folds.
    expect(await p.startWorkflow('digest', { n: 2 }, opts)).toMatchObject({ run: { id: first.run.id }, collapsedBy: 'debounce' });
    // Its deadline now falls before the window's new end (now + 60 s): folding would hand this
    // start's input to a run that times out before it executes.
    await db.query(`UPDATE baton.workflow_runs SET deadline_at = now() + interval '30 seconds' WHERE id = $1`, [first.run.id]);
    const job = await drivingJob(first.run.id);
    const third = await p.startWorkflow('digest', { n: 3 }, opts);
    expect(third.collapsedBy).toBeUndefined();
    expect(third.run.id).not.toBe(first.run.id);
    expect(await runsOf('digest')).toEqual([
      { id: first.run.id, input: { n: 2 } },
      { id: third.run.id, input: { n: 3 } },
    ]);
    expect((await drivingJob(first.run.id)).run_at).toEqual(job.run_at);
    // The new run holds the key: the next start folds into it.
    expect(await p.startWorkflow('digest', { n: 4 }, opts)).toMatchObject({ run: { id: third.run.id }, collapsedBy: 'debounce' });
  });

  it('leading: the first start runs at once, later ones in the window are dropped, and the window closes after it', async () => {
    const p = producer();
    const opts: StartRunOptions = { debounce: { key: 'k', windowMs: 30_000, mode: 'leading' } };
    const first = await p.startWorkflow('digest', { n: 1 }, opts);
    expect(first.collapsedBy).toBeUndefined();
    expect(ahead(await drivingJob(first.run.id))).toBeLessThanOrEqual(0);
    const dropped = await p.startWorkflow('digest', { n: 2 }, opts);
    expect(dropped).toMatchObject({ run: { id: first.run.id }, duplicate: false, collapsedBy: 'debounce' });
    await age(31_000);
    const next = await p.startWorkflow('digest', { n: 3 }, opts);
    expect(next.collapsedBy).toBeUndefined();
    expect((await runsOf('digest')).map((r) => r.input)).toEqual([{ n: 1 }, { n: 3 }]);
  });

  it('throttle: at most `limit` runs per window; the rest are dropped with the last run created', async () => {
    const p = producer();
    const opts: StartRunOptions = { throttle: { key: 'api', windowMs: 60_000, limit: 2 } };
    const r = [];
    for (let n = 1; n <= 4; n++) r.push(await p.startWorkflow('digest', { n }, opts));
    expect(r.map((x) => x.collapsedBy ?? null)).toEqual([null, null, 'throttle', 'throttle']);
    expect(r[2]!.run.id).toBe(r[1]!.run.id);
    expect(r[3]!.run.id).toBe(r[1]!.run.id);
    expect((await runsOf('digest')).map((x) => x.input)).toEqual([{ n: 1 }, { n: 2 }]);
    await age(60_001);
    expect((await p.startWorkflow('digest', { n: 5 }, opts)).collapsedBy).toBeUndefined();
  });

  it('concurrent trailing starts of one key from two engines make one run, which every answer names', async () => {
    const [a, b] = [producer(), producer()];
    const answers = await Promise.all(
      [a, b].flatMap((e, i) => Array.from({ length: 15 }, (_, n) => e.startWorkflow('digest', { i, n }, trailing({ key: 'hot' })))),
    );
    const runs = await runsOf('digest');
    expect(runs).toHaveLength(1);
    expect(new Set(answers.map((x) => x.run.id))).toEqual(new Set([runs[0]!.id]));
    expect(answers.filter((x) => !x.collapsedBy)).toHaveLength(1);
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE job_type = 'workflow:digest'`)).rows[0].n).toBe(1);
    // Leading and throttle under the same race: one run each.
    const lead = await Promise.all(
      [a, b].flatMap((e) =>
        Array.from({ length: 10 }, () => e.startWorkflow('digest', null, { debounce: { key: 'l', windowMs: 60_000, mode: 'leading' } })),
      ),
    );
    expect(lead.filter((x) => !x.collapsedBy)).toHaveLength(1);
    const thr = await Promise.all(
      [a, b].flatMap((e) =>
        Array.from({ length: 10 }, () => e.startWorkflow('digest', null, { throttle: { key: 't', windowMs: 60_000 } })),
      ),
    );
    expect(thr.filter((x) => !x.collapsedBy)).toHaveLength(1);
  });

  it('keys of runs are their own: a job with the same key on the queue never folds into a driving job, nor a run into a job', async () => {
    const p = producer();
    p.workflow<unknown>('other', (ctx) => ctx.step('seen', () => ctx.input), { queue: 'wq' });
    const job = await p.enqueue({ jobType: 'sync', queue: 'wq', payload: { job: 1 }, debounce: { key: 'user:1', windowMs: 60_000 } });
    const run = await p.startWorkflow('digest', { n: 1 }, trailing());
    expect(run.collapsedBy).toBeUndefined();
    const again = await p.enqueue({ jobType: 'sync', queue: 'wq', payload: { job: 2 }, debounce: { key: 'user:1', windowMs: 60_000 } });
    expect(again).toMatchObject({ created: false, job: { id: job.job.id, payload: { job: 2 } } });
    expect((await drivingJob(run.run.id)).payload).toEqual({ runId: run.run.id });
    // Another workflow on the queue shares the key, but does not fold into digest's run.
    const other = await p.startWorkflow('other', { o: 1 }, trailing());
    expect(other.collapsedBy).toBeUndefined();
    expect(await runsOf('digest')).toEqual([{ id: run.run.id, input: { n: 1 } }]);
    expect((await p.startWorkflow('other', { o: 2 }, trailing())).run.id).toBe(other.run.id);
    expect(await runsOf('other')).toEqual([{ id: other.run.id, input: { o: 2 } }]);
  });

  it('the leader sweeps a run key once its window closed and its run started; a key whose run is pending stays', async () => {
    const worker = withDigest(engines.create({ queues: { wq: 1 }, retentionIntervalMs: 50 }));
    await worker.start();
    await waitFor(() => worker.stats().leader === true, { message: 'the worker to lead' });
    const keys = async () => (await db.query<{ key: string; queue: string }>('SELECT key, queue FROM baton.job_windows ORDER BY key')).rows;
    const done = await worker.startWorkflow('digest', { n: 1 }, { throttle: { key: 'closing', windowMs: 1 } });
    await worker.startWorkflow('digest', { n: 2 }, trailing({ key: 'pending', windowMs: 3_600_000 }));
    await runInState(worker, done.run.id, 'succeeded');
    await waitFor(async () => (await keys()).length === 1, { message: 'the closed window swept' });
    expect(await keys()).toEqual([{ key: 'pending', queue: 'wq#runs' }]);
  });

  it('refuses bad rules and combinations with INVALID_ARGUMENT naming the field, writing nothing', async () => {
    const p = producer();
    const bad: Array<[StartRunOptions, RegExp]> = [
      [{ debounce: { key: '', windowMs: 10 } }, /debounce\.key/],
      [{ debounce: { key: 'k', windowMs: 0 } }, /debounce\.windowMs/],
      [{ debounce: { key: 'k', windowMs: 100, maxWaitMs: 50 } }, /debounce\.maxWaitMs/],
      [{ debounce: { key: 'k', windowMs: 10, mode: 'middle' as never } }, /debounce\.mode/],
      [{ debounce: { key: 'k', windowMs: 10 }, throttle: { key: 'k', windowMs: 10 } }, /throttle: debounce and throttle/],
      [{ debounce: { key: 'k', windowMs: 10 }, idempotencyKey: 'i' }, /idempotencyKey: idempotencyKey cannot be combined with debounce/],
      [{ throttle: { key: 'k', windowMs: 10 }, idempotencyKey: 'i' }, /idempotencyKey/],
      [{ throttle: { key: 'k', windowMs: 10, limit: 0 } }, /throttle\.limit/],
    ];
    for (const [opts, message] of bad) {
      const got = await code(p.startWorkflow('digest', { n: 1 }, opts));
      expect(got, JSON.stringify(opts)).toMatch(/^INVALID_ARGUMENT: /);
      expect(got).toMatch(message);
    }
    expect(await runsOf('digest')).toEqual([]);
    expect((await db.query('SELECT count(*)::int AS n FROM baton.job_windows')).rows[0].n).toBe(0);
  });

  it('a plain start sends no statement of the feature; a windowed one the key’s', async () => {
    // Every named statement the producer's pool sends, on pool.query or on a checked-out client.
    const { pool, names } = namingPool(db.url);
    pools.push(pool);
    const p = withDigest(engines.create({ queues: {}, pool }));
    await p.startWorkflow('digest', { n: 1 });
    const feature = () => names.filter((n) => /job_window|wf_fold_run|wf_insert_job_at|wf_run_by_job/.test(n));
    expect(names).toContain('"baton".wf_insert_job');
    expect(feature()).toEqual([]);
    await p.startWorkflow('digest', { n: 1 }, trailing());
    await p.startWorkflow('digest', { n: 2 }, trailing());
    expect(feature()).toEqual([
      '"baton".job_window_lock',
      '"baton".wf_insert_job_at',
      '"baton".job_window_write',
      '"baton".job_window_lock',
      '"baton".wf_fold_run',
      '"baton".job_window_write',
    ]);
  });

  it('over HTTP: 201 for the run a start created, 200 with collapsedBy after, 400 naming the field', async () => {
    const api = await startApi(db, { baton: { queues: {} } });
    try {
      withDigest(api.baton);
      // Typed through the client: the rule in the body, collapsedBy in the answer.
      const wf = api.client.api.workflows[':name'].runs;
      const debounce = { key: 'h:1', windowMs: 60_000, maxWaitMs: 120_000 };
      const first = await okJson(wf.$post({ param: { name: 'digest' }, json: { input: { n: 1 }, debounce } }), 201);
      expect(first).not.toHaveProperty('collapsedBy');
      const second = await okJson(wf.$post({ param: { name: 'digest' }, json: { input: { n: 2 }, debounce } }), 200);
      if (!('collapsedBy' in second)) expect.fail('a folded start answers collapsedBy');
      expectTypeOf(second.collapsedBy).toEqualTypeOf<'debounce' | 'throttle'>();
      expect(second).toMatchObject({ run: { id: first.run.id }, duplicate: false, collapsedBy: 'debounce' });
      const got = await okJson(api.client.api.workflows.runs[':id'].$get({ param: { id: first.run.id } }), 200);
      expect(got.input).toEqual({ n: 2 });
      const throttle = { key: 'h:t', windowMs: 60_000 };
      await okJson(wf.$post({ param: { name: 'digest' }, json: { input: { n: 3 }, throttle } }), 201);
      expect(await okJson(wf.$post({ param: { name: 'digest' }, json: { input: { n: 4 }, throttle } }), 200)).toMatchObject({
        collapsedBy: 'throttle',
      });
      const start = (input: unknown, extra: Record<string, unknown>) =>
        api.raw('/api/workflows/digest/runs', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ input, ...extra }) });

      const cases: Array<[Record<string, unknown>, string]> = [
        [{ debounce: { key: 'k', windowMs: 0 } }, 'debounce.windowMs'],
        [{ debounce: { key: 'k', windowMs: 100, maxWaitMs: 10 } }, 'debounce.maxWaitMs'],
        [{ debounce: { key: 'k', windowMs: 10, extra: 1 } }, 'debounce.extra'],
        [{ throttle: { key: 'k', windowMs: 10, limit: 0 } }, 'throttle.limit'],
        [{ debounce: { key: 'k', windowMs: 10 }, throttle: { key: 'k', windowMs: 10 } }, 'throttle'],
        [{ debounce: { key: 'k', windowMs: 10 }, idempotencyKey: 'i' }, 'idempotencyKey'],
      ];
      const before = (await runsOf('digest')).length;
      for (const [extra, path] of cases) {
        const res = await start({ n: 0 }, extra);
        expect(res.status, JSON.stringify(extra)).toBe(400);
        const body = (await res.json()) as { error: { code: string; details?: unknown } };
        expect(body.error.code).toBe('INVALID_ARGUMENT');
        expect(field(body)).toBe(path);
      }
      expect(await runsOf('digest')).toHaveLength(before);
    } finally {
      await api.close();
    }
  });
});
