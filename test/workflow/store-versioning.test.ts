// The workflow store's versioning and crash-count statements below the engine: a patch marker is
// written once and only under the current lease; a blocked run keeps its reason and is refused
// every later fenced write; a load counts an execution that ended in a reaped lease as a crash,
// and a step commit sets the count back.

import { beforeEach, describe, expect, it } from 'vitest';
import type { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { claimedRun, claimJob, freshStore } from './store-harness.ts';

const db = useTestDatabase();

describe('workflow store: versioning and crash counts', () => {
  let store: PgWorkflowStore;

  beforeEach(async () => {
    store = await freshStore(db);
  });

  it('workflowMarkPatch records one marker under the current lease, and nothing under a stale one', async () => {
    const lease = await claimedRun(db, store);
    expect(await store.workflowMarkPatch({ ...lease, name: '@patch:p', seq: 3 })).toEqual({ ok: true });
    expect(await store.workflowMarkPatch({ ...lease, name: '@patch:p', seq: 3 })).toEqual({ ok: true });
    const stale = { ...lease, token: lease.token };
    await claimJob(db, lease.jobId);
    expect(await store.workflowMarkPatch({ ...stale, name: '@patch:q', seq: 3 })).toEqual({ ok: false });
    const rows = await db.query('SELECT name, kind, status, seq, output FROM baton.workflow_steps WHERE run_id = $1', [lease.runId]);
    expect(rows.rows).toEqual([{ name: '@patch:p', kind: 'patch', status: 'succeeded', seq: 3, output: true }]);
  });

  it('workflowBlockRun stops the run blocked with its reason; its later writes are refused; a stale lease blocks nothing', async () => {
    const lease = await claimedRun(db, store);
    const other = await claimedRun(db, store);
    await claimJob(db, other.jobId);
    const reason = { code: 'NON_DETERMINISM', message: 'm', steps: ['a', 'b'] };
    expect(await store.workflowBlockRun({ ...other, reason: JSON.stringify(reason) })).toEqual({ ok: false });
    expect(await store.workflowBlockRun({ ...lease, reason: JSON.stringify(reason) })).toEqual({ ok: true });
    const run = await store.workflowGetRun({ runId: lease.runId });
    expect(run).toMatchObject({ state: 'blocked', blockedReason: reason });
    expect((await store.workflowGetRun({ runId: other.runId }))?.state).toBe('running');
    expect(await store.workflowCommitStep({ ...lease, name: 'x', occurrence: 1, seq: 0, output: '1', startedAt: new Date() })).toEqual({
      ok: false,
    });
  });

  it('a load after a reaped lease counts a crash; a step commit sets the count back to 0', async () => {
    const lease = await claimedRun(db, store);
    expect((await store.workflowLoad(lease))?.crashes).toBe(0);
    // The reaper's outcome for the execution: the lease expired before any outcome was written.
    await db.query(
      `UPDATE baton.jobs SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL,
         last_error = jsonb_build_object('kind', 'lease_expired', 'attempt', attempt) WHERE id = $1`,
      [lease.jobId],
    );
    const next = { ...lease, token: await claimJob(db, lease.jobId) };
    expect((await store.workflowLoad(next))?.crashes).toBe(1);
    // A load under the same attempt (a second load of the same execution) counts nothing more.
    expect((await store.workflowLoad(next))?.crashes).toBe(1);
    await store.workflowCommitStep({ ...next, name: 'x', occurrence: 1, seq: 0, output: '1', startedAt: new Date() });
    const third = { ...lease, token: await claimJob(db, lease.jobId) };
    // A failure (not a crash) ended the execution before: transient, not the reaper's.
    await db.query(`UPDATE baton.jobs SET last_error = '{"kind":"transient"}' WHERE id = $1`, [lease.jobId]);
    expect((await store.workflowLoad(third))?.crashes).toBe(0);
  });
});
