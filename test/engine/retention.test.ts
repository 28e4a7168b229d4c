// Retention end to end: the elected leader deletes finished jobs past their state's
// retention (a state with null is kept), and the job_windows rows no enqueue needs; with
// deleteOnSuccess a job leaves at the statement that completes it.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { Signal, waitFor } from '../helpers/wait.ts';
import { rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();
const exists = async (id: string) => (await db.query('SELECT 1 FROM baton.jobs WHERE id = $1', [id])).rowCount === 1;

describe('retention', () => {
  const engines = useEngines(db);

  it('the leader deletes finished jobs once past their retention; a state kept (null) stays', async () => {
    const purged = new Signal<{ state: string; queue: string; count: number }>();
    const worker = engines.create({
      queues: { q: 2 },
      retention: { succeededMs: null, cancelledMs: 0, deadLetteredMs: 60_000 },
      retentionIntervalMs: 50,
      handlers: { work: () => ({ ok: true }) },
    });
    worker.events.on('purged', (e) => purged.emit(e));
    await worker.start();
    await waitFor(() => worker.stats().leader === true, { message: 'the worker to lead' });
    const { job } = await worker.enqueue({ jobType: 'work', queue: 'q' });
    await rowInState(db, job.id, 'succeeded');
    const cancelled = await insertJob(db.pool, { queue: 'q', state: 'cancelled' });
    const deadYoung = await insertJob(db.pool, { queue: 'q', state: 'dead_lettered' });
    expect(await purged.next({ message: 'the cancelled job to be purged' })).toEqual({ state: 'cancelled', queue: 'q', count: 1 });
    expect(await exists(cancelled)).toBe(false);
    // The same sweep saw the succeeded job (kept) and the young dead letter (60 s retention).
    expect(await exists(job.id)).toBe(true);
    expect(await exists(deadYoung)).toBe(true);
  });

  it('a backlog larger than one sweep deletes is worked off in sweeps back to back, not one per interval', async () => {
    // 20 batches of 5 per sweep: 250 jobs take three sweeps, and the interval is an hour.
    await db.query(`INSERT INTO baton.jobs (queue, job_type, state, finished_at)
      SELECT 'backlog', 'x', 'cancelled', now() FROM generate_series(1, 250)`);
    const worker = engines.create({
      queues: { q: 1 },
      retention: { succeededMs: null, cancelledMs: 0, deadLetteredMs: null },
      retentionIntervalMs: 3_600_000,
      retentionBatchSize: 5,
    });
    await worker.start();
    await waitFor(async () => (await db.query(`SELECT 1 FROM baton.jobs WHERE queue = 'backlog' LIMIT 1`)).rowCount === 0, {
      message: 'the whole backlog to be deleted within one interval',
    });
  });

  it('the leader vacuums the jobs table once it holds vacuumDeadTuples dead row versions', { timeout: 45_000 }, async () => {
    const vacuums = async () =>
      (await db.query<{ n: number }>(`SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relid = 'baton.jobs'::regclass`))
        .rows[0]!.n;
    const before = await vacuums();
    // 1,000 jobs claimed and completed: two dead versions each.
    await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'vac', 'noop' FROM generate_series(1, 1000)`);
    const worker = engines.create({
      queues: { vac: 100 },
      retention: { succeededMs: null, cancelledMs: null, deadLetteredMs: null },
      retentionIntervalMs: 50,
      vacuumDeadTuples: 1_500,
      handlers: { noop: () => undefined },
    });
    await worker.start();
    // An idle backend reports its dead-tuple counts to the statistics up to 10 s late
    // (PostgreSQL's PGSTAT_IDLE_INTERVAL), so the leader may see the threshold that late.
    await waitFor(async () => (await vacuums()) > before, { message: 'a vacuum of jobs', timeoutMs: 30_000 });
    const dead = await db.query<{ n: number }>(`SELECT n_dead_tup::int AS n FROM pg_stat_user_tables WHERE relid = 'baton.jobs'::regclass`);
    expect(dead.rows[0]!.n).toBeLessThan(1_500);
  });

  it('the leader deletes a throttle key once its window closed and its job ran, even when every finished job is kept', async () => {
    const worker = engines.create({
      queues: { q: 1 },
      retention: { succeededMs: null, cancelledMs: null, deadLetteredMs: null },
      retentionIntervalMs: 50,
      handlers: { work: () => undefined },
    });
    await worker.start();
    await waitFor(() => worker.stats().leader === true, { message: 'the worker to lead' });
    const keys = async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.job_windows`)).rows[0]!.n;
    const open = await worker.enqueue({ jobType: 'work', queue: 'q', throttle: { key: 'open', windowMs: 3_600_000 } });
    const closing = await worker.enqueue({ jobType: 'work', queue: 'q', throttle: { key: 'closing', windowMs: 1 } });
    await rowInState(db, open.job.id, 'succeeded');
    await rowInState(db, closing.job.id, 'succeeded');
    await waitFor(async () => (await keys()) === 1, { message: 'the closed window swept' });
    expect((await db.query('SELECT key FROM baton.job_windows')).rows).toEqual([{ key: 'open' }]);
    expect(await exists(closing.job.id)).toBe(true);
  });

  it('with deleteOnSuccess a job leaves at completion, and still counts as succeeded', async () => {
    const succeeded = new Signal<string>();
    const worker = engines.create({ queues: { q: 1 }, deleteOnSuccess: true, handlers: { work: () => ({ kept: false }) } });
    worker.events.on('succeeded', (e) => succeeded.emit(e.job.id));
    await worker.start();
    const { job } = await worker.enqueue({ jobType: 'work', queue: 'q' });
    expect(await succeeded.next({ message: 'the job to succeed' })).toBe(job.id);
    expect(await exists(job.id)).toBe(false);
    expect(worker.stats().succeeded).toBe(1);
    // A failure is kept as before (retention, not deleteOnSuccess, handles those).
    const { job: bad } = await worker.enqueue({ jobType: 'nope', queue: 'q', maxAttempts: 1 });
    expect((await rowInState(db, bad.id, 'dead_lettered')).attempt).toBe(1);
  });
});
