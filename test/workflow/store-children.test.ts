// The workflow store's look at plain child jobs after a children wait's suspend: a child not over
// whose row a writer holds right now (its outcome may be committing, after its finishing
// statement saw the run still running and woke nobody) answers settling, so the run is woken to
// look again; the look never waits for the writer.

import { beforeEach, describe, expect, it } from 'vitest';
import type { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { claimedRun, freshStore } from './store-harness.ts';

const db = useTestDatabase();

describe('workflow store: plain child jobs settling', () => {
  let store: PgWorkflowStore;

  beforeEach(async () => {
    store = await freshStore(db);
  });

  it('answers true while a child not over is being written, false when none is, and false once all are over', async () => {
    const jobIds = [(await claimedRun(db, store)).jobId, (await claimedRun(db, store)).jobId];
    expect(await store.workflowChildJobsSettling({ jobIds })).toBe(false);

    // A finishing statement in flight: its transaction holds the child's row until it commits.
    const writer = await db.pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        `UPDATE baton.jobs SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`,
        [jobIds[1]],
      );
      expect(await store.workflowChildJobsSettling({ jobIds })).toBe(true);
      await writer.query('COMMIT');
    } finally {
      writer.release();
    }
    expect(await store.workflowChildJobsSettling({ jobIds })).toBe(false);

    await db.query(
      `UPDATE baton.jobs SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`,
      [jobIds[0]],
    );
    expect(await store.workflowChildJobsSettling({ jobIds })).toBe(false);
  });
});
