// The workflow store's versioning and crash-count statements below the engine: a patch marker is
// written once and only under the current lease; a blocked run keeps its reason and is refused
// every later fenced write; a load counts a crash (a reaped lease) of the execution that last loaded
// the run, not of one that died before its load, and a step commit sets the count back.

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

  it('a patch marker lists before the step at its position, whatever the two clocks say (read and load)', async () => {
    const lease = await claimedRun(db, store);
    expect(await store.workflowMarkPatch({ ...lease, name: '@patch:p', seq: 0 })).toEqual({ ok: true });
    // The step's start is the worker's clock, the marker's the database's: a worker a second behind.
    const behind = new Date(Date.now() - 1_000);
    expect(await store.workflowCommitStep({ ...lease, name: 'x', occurrence: 1, seq: 0, output: '1', startedAt: behind })).toMatchObject({
      ok: true,
    });
    const run = await store.workflowGetRun({ runId: lease.runId });
    expect(run?.steps.map((s) => s.key)).toEqual(['@patch:p', 'x']);
    const loaded = await store.workflowLoad(lease);
    expect(loaded?.steps.map((s) => s.name)).toEqual(['@patch:p', 'x']);
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

  it('a load counts a crash of the execution that last loaded the run, not one that died before its load; a commit sets it back', async () => {
    const lease = await claimedRun(db, store);
    // The reaper's outcome for the execution under the job's current lease, as job_reap writes it.
    const reap = (kind = 'lease_expired') =>
      db.query(
        `UPDATE baton.jobs SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL,
           last_error = jsonb_build_object('kind', $2::text, 'attempt', attempt, 'token', lease_token::text),
           errors = errors || jsonb_build_array(jsonb_build_object('kind', $2::text, 'attempt', attempt, 'token', lease_token::text))
         WHERE id = $1`,
        [lease.jobId, kind],
      );
    const load = async (token: string) => (await store.workflowLoad({ ...lease, token }))?.crashes;
    expect(await load(lease.token)).toBe(0);
    await reap();
    const second = await claimJob(db, lease.jobId);
    expect(await load(second)).toBe(1);
    // A second load of the same execution counts nothing more.
    expect(await load(second)).toBe(1);
    await store.workflowCommitStep({ ...lease, token: second, name: 'x', occurrence: 1, seq: 0, output: '1', startedAt: new Date() });
    // The execution that loaded ended in a failure (not the reaper's); the next one died before
    // its load, so it ran no step: nothing is counted.
    await db.query(
      `UPDATE baton.jobs SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL,
         errors = errors || '[{"kind":"transient"}]'::jsonb, last_error = '{"kind":"transient"}' WHERE id = $1`,
      [lease.jobId],
    );
    await claimJob(db, lease.jobId);
    await reap('worker_gone');
    const fourth = await claimJob(db, lease.jobId);
    expect(await load(fourth)).toBe(0);
    // It crashes after its load and the next one before its own: the first crash is still counted.
    await reap();
    await claimJob(db, lease.jobId);
    await reap();
    expect(await load(await claimJob(db, lease.jobId))).toBe(1);
  });
});
