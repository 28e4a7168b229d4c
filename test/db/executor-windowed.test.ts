// Conformance of jobEnqueueWindowed: the key's row in job_windows, the created job's row, a
// trailing fold's row-level effects (payload, run_at; nothing else), a fold refused by a claimed
// job, a leading drop and a throttle drop; and the job read joining the rule (job_get).

import { describe, expect, it } from 'vitest';
import type { EnqueueWindow } from '../../src/types/job.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { claim, ex, fresh, newJob, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const windowRow = async (queue: string) =>
  (
    await db.query<{ kind: string; job_id: string; opened_at: Date; until_at: Date; started: number; rule: unknown }>(
      'SELECT kind, job_id::text, opened_at, until_at, started, rule FROM baton.job_windows WHERE queue = $1',
      [queue],
    )
  ).rows;

describe('jobEnqueueWindowed', () => {
  const trailing: EnqueueWindow = { kind: 'debounce', key: 'k', windowMs: 60_000, mode: 'trailing', maxWaitMs: null };

  it('trailing: creates a pending job due in windowMs and writes the key row; a fold changes payload and run_at only', async () => {
    const queue = fresh();
    const first = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue, payload: { n: 1 }, priority: 3 }), window: trailing } });
    expect(first).toMatchObject({ created: true, job: { state: 'pending', enqueueWindow: trailing } });
    const created = await row(first.job.id);
    expect(created).toMatchObject({ state: 'pending', priority: 3, payload: { n: 1 }, lease_token: null });
    const [w] = await windowRow(queue);
    expect(w).toMatchObject({ kind: 'trailing', job_id: first.job.id, started: 0, rule: trailing });
    expect(w!.until_at.getTime()).toBe(created.run_at.getTime());
    expect(created.run_at.getTime() - w!.opened_at.getTime()).toBe(60_000);

    const second = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue, payload: { n: 2 }, priority: 9 }), window: trailing } });
    expect(second).toMatchObject({ created: false, collapsedBy: 'debounce', job: { id: first.job.id } });
    const folded = await row(first.job.id);
    expect(folded).toMatchObject({ payload: { n: 2 }, priority: 3, attempt: 0, state: 'pending' });
    expect(folded.run_at.getTime()).toBeGreaterThanOrEqual(created.run_at.getTime());
    expect((await windowRow(queue))[0]!.opened_at).toEqual(w!.opened_at);
  });

  it('trailing: a claimed job is not folded into; a new job is created and the row points at it', async () => {
    const queue = fresh();
    const first = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue }), window: { ...trailing, windowMs: 1 } } });
    await db.query('UPDATE baton.jobs SET run_at = now() WHERE id = $1', [first.job.id]);
    expect(await claim(queue, 1)).toHaveLength(1);
    const next = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue, payload: 'later' }), window: trailing } });
    expect(next.created).toBe(true);
    expect(next.job.id).not.toBe(first.job.id);
    expect((await row(first.job.id)).payload).toEqual(newJob().payload);
    expect((await windowRow(queue))[0]!.job_id).toBe(next.job.id);
  });

  it('leading drops and throttle drops write no job; the read of a job joins its rule', async () => {
    const queue = fresh();
    const leading: EnqueueWindow = { kind: 'debounce', key: 'l', windowMs: 60_000, mode: 'leading', maxWaitMs: null };
    const a = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue }), window: leading } });
    const b = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue, payload: 'dropped' }), window: leading } });
    expect(b).toMatchObject({ created: false, collapsedBy: 'debounce', job: { id: a.job.id, payload: newJob().payload } });
    const throttle: EnqueueWindow = { kind: 'throttle', key: 't', windowMs: 60_000, limit: 1 };
    const c = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue }), window: throttle } });
    const d = await ex.jobEnqueueWindowed({ job: { ...newJob({ queue }), window: throttle } });
    expect(d).toMatchObject({ created: false, collapsedBy: 'throttle', job: { id: c.job.id } });
    expect((await db.query('SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1', [queue])).rows[0].n).toBe(2);
    expect((await windowRow(queue)).map((w) => [w.kind, w.started]).sort()).toEqual([
      ['leading', 1],
      ['throttle', 1],
    ]);
    expect((await ex.jobGet({ id: c.job.id }))?.enqueueWindow).toEqual(throttle);
  });
});

describe('jobWindowSweep', () => {
  const trailing: EnqueueWindow = { kind: 'debounce', key: 'k', windowMs: 60_000, mode: 'trailing', maxWaitMs: null };
  const keys = async (queue: string) =>
    (await db.query<{ key: string }>('SELECT key FROM baton.job_windows WHERE queue = $1 ORDER BY key', [queue])).rows.map((r) => r.key);
  const enqueue = (queue: string, window: EnqueueWindow) => ex.jobEnqueueWindowed({ job: { ...newJob({ queue }), window } });
  // Closes every window of the queue (the sweep reads until_at only through its index order).
  const closeWindows = (queue: string) =>
    db.query(`UPDATE baton.job_windows SET until_at = now() - interval '1 minute' WHERE queue = $1`, [queue]);
  const walk = async (epoch: string, limit: number) => {
    let after: Parameters<typeof ex.jobWindowSweep>[0]['after'] = null;
    let deleted = 0;
    for (let i = 0; i < 100; i++) {
      const r = await ex.jobWindowSweep({ after, limit, epoch });
      deleted += r.deleted;
      if (r.done) return deleted;
      after = r.last;
    }
    throw new Error('the walk did not end');
  };

  it('deletes closed windows whose job was claimed; keeps a pending unclaimed job and an open window; fenced by the epoch', async () => {
    const queue = fresh();
    await enqueue(queue, { ...trailing, key: 'a-pending' });
    const b = await enqueue(queue, { ...trailing, key: 'b-claimed' });
    const c = await enqueue(queue, { kind: 'debounce', key: 'c-leading', windowMs: 1, mode: 'leading', maxWaitMs: null });
    await db.query('UPDATE baton.jobs SET run_at = now() WHERE id = ANY($1::bigint[])', [[b.job.id, c.job.id]]);
    expect(await claim(queue, 10)).toHaveLength(2);
    await enqueue(queue, { kind: 'throttle', key: 'd-open', windowMs: 60_000, limit: 1 });
    await closeWindows(queue);
    await db.query(`UPDATE baton.job_windows SET until_at = now() + interval '1 minute' WHERE queue = $1 AND key = 'd-open'`, [queue]);

    expect(await walk('999999999', 10)).toBe(0);
    expect(await keys(queue)).toEqual(['a-pending', 'b-claimed', 'c-leading', 'd-open']);
    const epoch = await takeLeaderLease(db.pool);
    // One row a batch: the walk passes the row it keeps and goes on to the others.
    expect(await walk(epoch, 1)).toBe(2);
    expect(await keys(queue)).toEqual(['a-pending', 'd-open']);

    // The swept key starts over: its next enqueue creates a job, as for a key never used.
    const again = await enqueue(queue, { ...trailing, key: 'b-claimed' });
    expect(again.created).toBe(true);
    // Once their jobs are claimed, the keys kept go at the next walk.
    await db.query(`UPDATE baton.jobs SET run_at = now() WHERE state = 'pending' AND queue = $1`, [queue]);
    expect(await claim(queue, 10)).toHaveLength(3);
    await closeWindows(queue);
    expect(await walk(epoch, 10)).toBe(3);
    expect(await keys(queue)).toEqual([]);
  });
});
