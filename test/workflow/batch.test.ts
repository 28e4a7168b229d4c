// Batched execution writes on a real database: step commits, completions and loads of
// several executions share one statement, and each row stays fenced by its own lease: a
// stale token's row in a shared batch is refused while the others land, commits of one
// step in one batch converge on one stored output, and a row the database refuses fails
// only its own execution.

import { beforeEach, describe, expect, it } from 'vitest';
import { WorkflowBatcher } from '../../src/core/workflow/batcher.ts';
import { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import type { RunLease, StepCommit } from '../../src/driver/workflow-store.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { claimedRun, claimJob } from './store-harness.ts';

const db = useTestDatabase();

describe('batched workflow writes', () => {
  let store: PgWorkflowStore;

  beforeEach(async () => {
    store = new PgWorkflowStore(db.pool, 'baton');
    await db.query('TRUNCATE baton.jobs, baton.workflow_runs CASCADE');
  });

  const claim = (jobId: string) => claimJob(db, jobId);

  async function claimedRuns(n: number): Promise<RunLease[]> {
    const out: RunLease[] = [];
    for (let i = 0; i < n; i++) out.push(await claimedRun(db, store));
    return out;
  }

  const commit = (lease: RunLease, name: string, seq: number, output: string): StepCommit => ({
    ...lease,
    name,
    occurrence: 1,
    seq,
    output,
    startedAt: new Date(),
  });

  async function storedSteps(): Promise<Array<{ run_id: string; name: string; output: unknown }>> {
    return (await db.query('SELECT run_id::text, name, output FROM baton.workflow_steps ORDER BY run_id, name')).rows;
  }

  async function progress(runId: string): Promise<number> {
    return (await db.query('SELECT progress FROM baton.workflow_runs WHERE id = $1', [runId])).rows[0].progress;
  }

  it('a stale lease in a shared batch is refused while the other rows land, each advancing its own run', async () => {
    const [a, b, c] = (await claimedRuns(3)) as [RunLease, RunLease, RunLease];
    await claim(b.jobId); // b's lease was taken over: its token is stale
    const res = await store.workflowCommitSteps([commit(a, 's', 0, '"a"'), commit(b, 's', 0, '"b"'), commit(c, 's', 0, '"c"')]);
    expect(res).toEqual([{ ok: true, won: true, output: 'a' }, { ok: false }, { ok: true, won: true, output: 'c' }]);
    expect(await storedSteps()).toEqual([
      { run_id: a.runId, name: 's', output: 'a' },
      { run_id: c.runId, name: 's', output: 'c' },
    ]);
    expect([await progress(a.runId), await progress(b.runId), await progress(c.runId)]).toEqual([1, 0, 1]);
  });

  it('commits of one step in one batch converge: one wins, every one answers the stored output', async () => {
    const [a, b] = (await claimedRuns(2)) as [RunLease, RunLease];
    const res = await store.workflowCommitSteps([commit(a, 's', 0, '{"n": 1}'), commit(b, 's', 0, '2'), commit(a, 's', 0, '{"n": 9}')]);
    expect(res).toEqual([
      { ok: true, won: true, output: { n: 1 } },
      { ok: true, won: true, output: 2 },
      { ok: true, won: false, output: { n: 1 } },
    ]);
    // A later commit of the step, batched or not, finds it committed.
    expect(await store.workflowCommitSteps([commit(a, 's', 0, '3')])).toEqual([{ ok: true, won: false, output: { n: 1 } }]);
  });

  it('completions in one batch: a stale lease is refused, the other runs succeed', async () => {
    const [a, b] = (await claimedRuns(2)) as [RunLease, RunLease];
    await claim(a.jobId);
    expect(
      await store.workflowCompleteRuns([
        { ...a, output: '1' },
        { ...b, output: '2' },
      ]),
    ).toEqual([{ ok: false }, { ok: true, output: 2 }]);
    const states = await db.query('SELECT id::text, state FROM baton.workflow_runs ORDER BY id');
    expect(states.rows).toEqual([
      { id: a.runId, state: 'running' },
      { id: b.runId, state: 'succeeded' },
    ]);
  });

  it('loads of several executions answer in the order asked, marked only under a current lease', async () => {
    const [a, b] = (await claimedRuns(2)) as [RunLease, RunLease];
    await store.workflowCommitSteps([commit(b, 's', 0, '"b"')]);
    await claim(a.jobId);
    const missing = { ...a, runId: '999999999' };
    const [lb, la, lm] = await store.workflowLoadMany([b, a, missing]);
    expect(lb).toMatchObject({ id: b.runId, marked: true, steps: [{ name: 's', output: 'b', status: 'succeeded' }] });
    expect(la).toMatchObject({ id: a.runId, marked: false, steps: [] });
    expect(lm).toBeNull();
  });

  it('the batcher sends what arrives together as one statement per kind; each execution gets its own row', async () => {
    const leases = await claimedRuns(4);
    const stale = leases[3] as RunLease;
    await claim(stale.jobId);
    const batcher = new WorkflowBatcher(store);
    const loads = await Promise.all(leases.map((l) => batcher.load(l)));
    expect(loads.map((l) => l?.marked)).toEqual([true, true, true, false]);
    const res = await Promise.all(leases.map((l, i) => batcher.commitStep(commit(l, 's', 0, String(i)))));
    expect(res).toEqual([
      { ok: true, won: true, output: 0 },
      { ok: true, won: true, output: 1 },
      { ok: true, won: true, output: 2 },
      { ok: false },
    ]);
    const done = await Promise.all(leases.map((l, i) => batcher.completeRun({ ...l, output: String(i * 10) })));
    expect(done).toEqual([{ ok: true, output: 0 }, { ok: true, output: 10 }, { ok: true, output: 20 }, { ok: false }]);
    expect(batcher.statements()).toEqual({ loads: 1, steps: 1, completions: 1 });
  });

  it.each([
    ['alone', 1],
    ['in a batch', 2],
  ])('a step commit %s locks the run row before the job row, as a cancel does: the two wait, never deadlock', async (_, n) => {
    const [b, a] = (await claimedRuns(2)) as [RunLease, RunLease];
    // A cancel's transaction, held open between its two writes: the run row, then the job row.
    const cancel = await db.pool.connect();
    try {
      await cancel.query('BEGIN');
      await cancel.query(`SELECT id FROM baton.workflow_runs WHERE id = $1 FOR UPDATE`, [b.runId]);
      const rows = [commit(b, 's', 0, '"b"'), commit(a, 's', 0, '"a"')].slice(0, n);
      const batch = store.workflowCommitSteps(rows);
      // The batch waits for the run row the cancel holds (as a step commit waited before batching).
      await waitFor(
        async () =>
          // This file's database only: other files run at the same time on the same server.
          (
            await db.query(
              `SELECT 1 FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%workflow_steps%'`,
            )
          ).rowCount === 1,
        { timeoutMs: 5_000, message: 'the batch to wait for the run row' },
      );
      await cancel.query(`UPDATE baton.workflow_runs SET state = 'cancelled' WHERE id = $1`, [b.runId]);
      await cancel.query(
        `UPDATE baton.jobs SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`,
        [b.jobId],
      );
      await cancel.query('COMMIT');
      expect(await batch).toEqual([{ ok: false }, { ok: true, won: true, output: 'a' }].slice(0, n));
    } finally {
      await cancel.query('ROLLBACK').catch(() => undefined);
      cancel.release();
    }
  });

  it('a row the database refuses fails only its own execution; the rest of its batch lands', async () => {
    const [a, b] = (await claimedRuns(2)) as [RunLease, RunLease];
    const batcher = new WorkflowBatcher(store);
    // A lone surrogate: valid JSON text that jsonb refuses.
    const [ra, rb] = await Promise.allSettled([
      batcher.commitStep(commit(a, 's', 0, '"\\ud800"')),
      batcher.commitStep(commit(b, 's', 0, '"fine"')),
    ]);
    expect(ra.status).toBe('rejected');
    expect(rb).toEqual({ status: 'fulfilled', value: { ok: true, won: true, output: 'fine' } });
    expect(await storedSteps()).toEqual([{ run_id: b.runId, name: 's', output: 'fine' }]);
  });
});
