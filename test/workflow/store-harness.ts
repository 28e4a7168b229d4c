// Workflow store tests below the engine: a run started through the store whose driving job is
// claimed by hand (a fresh lease token), so a test holds the lease an execution would.

import { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import type { RunLease } from '../../src/driver/workflow-store.ts';
import type { TestDatabase } from '../helpers/db.ts';

/** Leases job `jobId` now, as a claim would: answers its new token. */
export async function claimJob(db: TestDatabase, jobId: string): Promise<string> {
  const r = await db.query(
    `UPDATE baton.jobs SET state = 'running', lease_token = nextval('baton.lease_token_seq'), lease_owner = 'test',
       lease_expires_at = now() + interval '1 minute', attempt = attempt + 1 WHERE id = $1 RETURNING lease_token::text AS t`,
    [jobId],
  );
  return r.rows[0].t;
}

/** A run of workflow 'w' whose driving job is claimed now: its lease. */
export async function claimedRun(db: TestDatabase, store: PgWorkflowStore): Promise<RunLease> {
  const { run } = await store.workflowStartRun({
    name: 'w',
    tenantId: 'default',
    input: '{}',
    idempotencyKey: null,
    queue: 'q',
    jobType: 'workflow:w',
    maxAttempts: 5,
  });
  return { runId: run.id, jobId: run.jobId as string, token: await claimJob(db, run.jobId as string) };
}

/** A store over emptied jobs and workflow tables: each store test starts from none. */
export async function freshStore(db: TestDatabase): Promise<PgWorkflowStore> {
  await db.query('TRUNCATE baton.jobs, baton.workflow_runs CASCADE');
  return new PgWorkflowStore(db.pool, 'baton');
}
