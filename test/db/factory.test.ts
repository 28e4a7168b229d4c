// The row factory writes valid rows in every state (CHECK constraints hold),
// draws strictly increasing tokens, and resolves relative times on the database clock.

import { describe, expect, it } from 'vitest';
import { JOB_STATES } from '../../src/types/job.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, insertJobs, jobRow } from '../helpers/factory.ts';

describe('insertJob', () => {
  const db = useTestDatabase();

  it.each(JOB_STATES)('writes a valid %s row with state-appropriate defaults', async (state) => {
    const id = await insertJob(db.pool, { state, queue: `q-${state}` });
    const row = await jobRow(db.pool, id);
    expect(row).toMatchObject({ id, state, queue: `q-${state}` });
    const live = state === 'leased' || state === 'running';
    expect(row!.lease_owner !== null).toBe(live);
    expect(row!.lease_token !== null).toBe(live);
    expect(row!.dead_letter_reason !== null).toBe(state === 'dead_lettered');
    expect(row!.finished_at !== null).toBe(['succeeded', 'dead_lettered', 'cancelled'].includes(state));
  });

  it('draws strictly increasing lease tokens from lease_token_seq', async () => {
    const ids = await insertJobs(db.pool, 3, { state: 'running' });
    const tokens = [];
    for (const id of ids) tokens.push(BigInt((await jobRow(db.pool, id))!.lease_token));
    expect(tokens[0]! < tokens[1]! && tokens[1]! < tokens[2]!).toBe(true);
  });

  it('resolves relative times against the database clock and keeps explicit values', async () => {
    const id = await insertJob(db.pool, {
      state: 'leased',
      runAt: { inMs: 60_000 },
      leaseExpiresAt: { inMs: -1_000 },
      leaseOwner: 'w1',
      leaseToken: 42,
      attempt: 3,
      maxAttempts: 3,
      tenantId: 't1',
      idempotencyKey: 'k1',
      payload: { a: [1, 2] },
      errors: [{ attempt: 1 }],
    });
    const r = await db.query(
      `SELECT run_at > now() + interval '50 s' AS later, lease_expires_at < now() AS expired, * FROM baton.jobs WHERE id = $1`,
      [id],
    );
    expect(r.rows[0]).toMatchObject({
      later: true,
      expired: true,
      lease_owner: 'w1',
      lease_token: '42',
      attempt: 3,
      tenant_id: 't1',
      idempotency_key: 'k1',
      payload: { a: [1, 2] },
      errors: [{ attempt: 1 }],
    });
  });

  it('lets the table reject an explicitly inconsistent row', async () => {
    await expect(insertJob(db.pool, { state: 'pending', leaseOwner: 'w1' })).rejects.toThrow(/jobs_lease_consistent/);
  });
});
