// The workflow store's ordering guarantees on a real database, below the engine:
// two commits of one step converge on the first stored output (jsonb-normalised),
// a lease that was taken over writes nothing, a run's progress never rewinds, and steps of one
// run committed at once do not deadlock on its row.

import pg from 'pg';
import { beforeEach, describe, expect, it } from 'vitest';
import type { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import type { RunLease } from '../../src/driver/workflow-store.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { claimedRun as claimedRunOf, claimJob, freshStore } from './store-harness.ts';

const db = useTestDatabase();

describe('workflow store', () => {
  let store: PgWorkflowStore;

  beforeEach(async () => {
    store = await freshStore(db);
  });

  const claimedRun = () => claimedRunOf(db, store);
  const claim = (jobId: string) => claimJob(db, jobId);

  const step = (lease: RunLease, name: string, seq: number, output: string) =>
    store.workflowCommitStep({ ...lease, name, occurrence: 1, seq, output, startedAt: new Date() });

  it('two commits of the same step converge: one wins, the other reads the stored (normalised) output', async () => {
    const lease = await claimedRun();
    const [a, b] = await Promise.all([step(lease, 's', 0, '{"b": 1, "a": 2.50}'), step(lease, 's', 0, '{"other": true}')]);
    expect([a.ok, b.ok]).toEqual([true, true]);
    const results = [a, b] as Array<{ won: boolean; output: unknown }>;
    expect(results.filter((r) => r.won)).toHaveLength(1);
    const stored = (await store.workflowReadStep({ runId: lease.runId, name: 's', occurrence: 1 }))?.output;
    expect(results.map((r) => r.output)).toEqual([stored, stored]);
    expect(JSON.stringify(stored)).toMatch(/^\{"a":2\.50?,"b":1\}$|^\{"other":true\}$/);
  });

  it('two steps of one run committed at once both land, however their statements meet at the run row (no deadlock)', async () => {
    const lease = await claimedRun();
    // An outside share of the run row holds both commits at their first lock of it, so they meet
    // there together: had each taken the row shared, each would wait for the other to update it.
    const outside = new pg.Client({ connectionString: db.url });
    await outside.connect();
    try {
      await outside.query('BEGIN');
      await outside.query('SELECT 1 FROM baton.workflow_runs WHERE id = $1 FOR SHARE', [lease.runId]);
      const commits = Promise.allSettled([step(lease, 'a', 0, '"A"'), step(lease, 'b', 1, '"B"')]);
      await waitFor(
        async () =>
          (
            await db.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows[0].n === 2,
        { message: 'both commits to wait on the run row' },
      );
      await outside.query('COMMIT');
      const [a, b] = await commits;
      expect(a).toMatchObject({ status: 'fulfilled', value: { ok: true, won: true, output: 'A' } });
      expect(b).toMatchObject({ status: 'fulfilled', value: { ok: true, won: true, output: 'B' } });
    } finally {
      await outside.end();
    }
    const steps = await db.query('SELECT name FROM baton.workflow_steps WHERE run_id = $1 ORDER BY name', [lease.runId]);
    expect(steps.rows.map((r) => r.name)).toEqual(['a', 'b']);
    const run = await db.query('SELECT progress FROM baton.workflow_runs WHERE id = $1', [lease.runId]);
    expect(run.rows[0].progress).toBe(2);
  });

  it('a lease that was taken over writes nothing: no step, no wait, no suspend, no completion', async () => {
    const stale = await claimedRun();
    const fresh = { ...stale, token: await claim(stale.jobId) };
    expect(await step(stale, 's', 0, '1')).toEqual({ ok: false });
    expect(
      await store.workflowArmWait({
        ...stale,
        name: 'z',
        occurrence: 1,
        seq: 0,
        kind: 'sleep',
        wait: null,
        delayMs: 1000,
        until: null,
      }),
    ).toEqual({ ok: false });
    expect(await store.workflowSuspend({ ...stale, steps: [{ name: 'z', occurrence: 1 }], state: 'sleeping', waitEvent: null })).toEqual({
      ok: false,
    });
    expect(await store.workflowCompleteRun({ ...stale, output: '1' })).toEqual({ ok: false });
    expect(await store.workflowRefusal(stale)).toEqual({ kind: 'lease_lost' });
    const steps = await db.query('SELECT count(*)::int AS n FROM baton.workflow_steps');
    expect(steps.rows[0].n).toBe(0);
    expect(await step(fresh, 's', 0, '2')).toMatchObject({ ok: true, won: true, output: 2 });
  });

  it('progress never rewinds: a commit at an earlier position leaves it where it was', async () => {
    const lease = await claimedRun();
    await step(lease, 'c', 2, '"c"');
    await step(lease, 'a', 0, '"a"');
    const r = await store.workflowGetRun({ runId: lease.runId });
    expect(r?.progress).toBe(3);
  });

  it('a cancelled run takes no more step writes, even under a current lease', async () => {
    const lease = await claimedRun();
    const cancelled = await store.workflowCancelRun({ runId: lease.runId, allowed: () => true });
    expect(cancelled).toMatchObject({ state: 'cancelled' });
    expect(await step(lease, 's', 0, '1')).toEqual({ ok: false });
    expect(await store.workflowRefusal(lease)).toEqual({ kind: 'cancelled' });
  });
});
