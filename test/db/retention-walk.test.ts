// Retention's walk over the jobs in id order, on a real database: each sweep goes on from
// where the last one stopped, so a job it passed before it was due (created long ago, finished
// late) is deleted only when the walk starts over from the oldest (revisitMs), which it does
// only once a pass has got through; and a walk in progress is started over under a new epoch
// (a new leadership).

import { describe, expect, it } from 'vitest';
import { parseEngineConfig } from '../../src/core/config.ts';
import { Retention } from '../../src/core/retention.ts';
import { insertJob, jobRow } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { ex, fresh, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const HOUR = 3_600_000;
const exists = async (id: string) => (await jobRow(db.pool, id)) !== undefined;

function retention(epoch: () => string | null, revisitMs: number) {
  const config = parseEngineConfig(
    { retention: { succeededMs: HOUR, cancelledMs: null, deadLetteredMs: null }, retentionBatchSize: 10, vacuumDeadTuples: null },
    () => 'w-retention',
  );
  return new Retention({
    executor: ex,
    config,
    leaderEpoch: epoch,
    onPurged: () => undefined,
    onError: (e) => {
      throw e;
    },
    revisitMs,
  });
}

describe('the retention walk', () => {
  it('passes a job that is not due yet, and deletes it once the walk starts over after it became due', async () => {
    const queue = fresh('walk');
    const old = (h: number) => ({ queue, state: 'succeeded' as const, createdAt: { inMs: -h * HOUR }, finishedAt: { inMs: -h * HOUR } });
    const a = await insertJob(db.pool, old(5));
    // Created five hours ago too, but finished a minute ago: not due for another hour.
    const late = await insertJob(db.pool, { ...old(5), finishedAt: { inMs: -60_000 } });
    const c = await insertJob(db.pool, old(4));
    const epoch = await takeLeaderLease(db.pool);
    const never = retention(() => epoch, Number.POSITIVE_INFINITY);
    await never.sweep();
    expect([await exists(a), await exists(late), await exists(c)]).toEqual([false, true, false]);
    // Due now; the walk has passed it and goes on from where it stopped: kept.
    await db.query(`UPDATE baton.jobs SET finished_at = now() - interval '2 hours' WHERE id = $1`, [late]);
    await never.sweep();
    expect(await exists(late)).toBe(true);
    // A walk that starts over from the oldest reaches it.
    const always = retention(() => epoch, 0);
    await always.sweep();
    expect(await exists(late)).toBe(false);
  });

  it('goes on with a pass that has not got through, rather than start over before it reaches the due jobs', async () => {
    await db.query('DELETE FROM baton.jobs');
    const queue = fresh('walk-long');
    // 250 old pending jobs: more than one sweep reads (20 batches of 10), then a due one.
    await db.query(
      `INSERT INTO baton.jobs (queue, job_type, created_at) SELECT $1, 't', now() - interval '5 hours' FROM generate_series(1, 250)`,
      [queue],
    );
    const due = await insertJob(db.pool, { queue, state: 'succeeded', createdAt: { inMs: -4 * HOUR }, finishedAt: { inMs: -4 * HOUR } });
    const epoch = await takeLeaderLease(db.pool);
    // Starts over whenever it may: after every pass that got through.
    const r = retention(() => epoch, 0);
    await r.sweep();
    expect(await exists(due)).toBe(true);
    await r.sweep();
    expect(await exists(due)).toBe(false);
    await db.query('DELETE FROM baton.jobs WHERE queue = $1', [queue]);
  });

  it('starts every walk over under a new epoch', async () => {
    const queue = fresh('walk-epoch');
    const late = await insertJob(db.pool, { queue, state: 'succeeded', createdAt: { inMs: -5 * HOUR }, finishedAt: { inMs: -60_000 } });
    await insertJob(db.pool, { queue, state: 'succeeded', createdAt: { inMs: -4 * HOUR }, finishedAt: { inMs: -4 * HOUR } });
    let epoch = await takeLeaderLease(db.pool);
    const r = retention(() => epoch, Number.POSITIVE_INFINITY);
    await r.sweep();
    await db.query(`UPDATE baton.jobs SET finished_at = now() - interval '2 hours' WHERE id = $1`, [late]);
    await r.sweep();
    expect(await exists(late)).toBe(true);
    epoch = await takeLeaderLease(db.pool);
    await r.sweep();
    expect(await exists(late)).toBe(false);
  });
});
