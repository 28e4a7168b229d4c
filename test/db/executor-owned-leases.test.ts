// Conformance of the two reads behind the stranded-lease sweep: the live leases one
// worker owns (and only those), and the token high-water mark that bounds every token
// handed out before it was read.

import { beforeAll, describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';

const db = useTestDatabase();
let ex: PgExecutor;

beforeAll(() => {
  ex = new PgExecutor(db.pool, quoteSchema(db.schema));
});

describe('jobLeasesOwned', () => {
  it("returns the owner's live leases with token and queue, and nothing of other owners or finished jobs", async () => {
    const expires = new Date(Date.now() + 60_000);
    const mine1 = await insertJob(db.pool, { queue: 'o1', state: 'running', leaseOwner: 'w-own', leaseExpiresAt: expires, attempt: 1 });
    const mine2 = await insertJob(db.pool, { queue: 'o2', state: 'leased', leaseOwner: 'w-own', leaseExpiresAt: expires, attempt: 1 });
    await insertJob(db.pool, { queue: 'o1', state: 'running', leaseOwner: 'w-other', leaseExpiresAt: expires, attempt: 1 });
    await insertJob(db.pool, { queue: 'o1', state: 'succeeded', attempt: 1 });
    const owned = await ex.jobLeasesOwned({ owner: 'w-own' });
    const tokens = await db.query<{ id: string; token: string }>(
      'SELECT id::text, lease_token::text AS token FROM baton.jobs WHERE id = ANY($1::bigint[])',
      [[mine1, mine2]],
    );
    const byId = new Map(tokens.rows.map((r) => [r.id, r.token]));
    expect(owned.sort((a, b) => a.queue.localeCompare(b.queue))).toEqual([
      { id: mine1, token: byId.get(mine1), queue: 'o1' },
      { id: mine2, token: byId.get(mine2), queue: 'o2' },
    ]);
    expect(await ex.jobLeasesOwned({ owner: 'w-nobody' })).toEqual([]);
  });
});

describe('jobTokenHighWater', () => {
  it('is at least every token handed out before it, and below every token handed out after', async () => {
    const before = await db.query<{ t: string }>(`SELECT nextval('baton.lease_token_seq')::text AS t`);
    const mark = await ex.jobTokenHighWater();
    const after = await db.query<{ t: string }>(`SELECT nextval('baton.lease_token_seq')::text AS t`);
    expect(mark).toBeGreaterThanOrEqual(BigInt(before.rows[0]!.t));
    expect(BigInt(after.rows[0]!.t)).toBeGreaterThan(mark);
  });
});
