// Asynchronous claims and the token floor that keeps them safe: a session of a pool with the
// floor installed advances the token sequence durably before its first claim and then claims
// without waiting for the WAL flush; any other session claims synchronously; and a token the
// sequence has forgotten (as a crash forgets an unflushed claim) is never handed out again by
// a marked session, while an unmarked one would hand it out twice. Before migrations the
// mark does nothing, quietly, and a session is marked on its first checkout after them.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createBaton } from '../../src/create-baton.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { ClaimRow } from '../../src/db/pg/claim.ts';
import { jobQueries, TOKEN_FLOOR_STEP } from '../../src/db/pg/queries/job.ts';
import { installTokenFloor } from '../../src/db/pg/token-floor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { createTestDatabase, useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { deferred } from '../helpers/wait.ts';

const db = useTestDatabase();
const queries = () => jobQueries(quoteSchema(db.schema));
let seq = 0;
const fresh = () => `floor-${++seq}`;

function markedPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  pool.on('error', () => undefined);
  installTokenFloor(pool, queries().tokenFloor);
  return pool;
}

async function sequenceValue(): Promise<bigint> {
  const r = await db.query<{ v: string }>('SELECT last_value::text AS v FROM baton.lease_token_seq');
  return BigInt(r.rows[0]!.v);
}

/** Claims `queue` on `client` in a transaction, reading the synchronous_commit its commit will use. */
async function claimOn(client: pg.ClientBase, queue: string): Promise<{ tokens: bigint[]; syncCommit: string }> {
  await client.query('BEGIN');
  try {
    const r = await client.query<ClaimRow>({ ...queries().claim(10), values: [queue, 10, 'test-worker', true, 5_000] });
    const s = await client.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`);
    await client.query('COMMIT');
    return { tokens: r.rows.map((row) => BigInt(row[7])), syncCommit: s.rows[0]!.s };
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

describe('token floor', () => {
  it('a marked session advances the sequence by the step before its first claim, which commits asynchronously', async () => {
    const queue = fresh();
    await insertJob(db, { queue });
    const before = await sequenceValue();
    const pool = markedPool();
    try {
      const client = await pool.connect();
      try {
        const { tokens, syncCommit } = await claimOn(client, queue);
        expect(syncCommit).toBe('off');
        expect(tokens).toHaveLength(1);
        expect(tokens[0]!).toBeGreaterThan(before + BigInt(TOKEN_FLOOR_STEP));
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });

  it('a session without the mark claims with a synchronous commit', async () => {
    const queue = fresh();
    await insertJob(db, { queue });
    const client = await db.pool.connect();
    try {
      const { tokens, syncCommit } = await claimOn(client, queue);
      expect(syncCommit).toBe('on');
      expect(tokens).toHaveLength(1);
    } finally {
      client.release();
    }
  });

  it('a token the sequence forgot is handed out again without the mark, and never by a marked session', async () => {
    const queue = fresh();
    const id = await insertJob(db, { queue });
    const plain = await db.pool.connect();
    try {
      // A claim, then what a crash before its WAL flush leaves: the job pending, its attempt
      // unspent, the sequence back before its token. The worker still holds that token.
      const forget = async (token: bigint) => {
        await db.query(
          `UPDATE baton.jobs SET state = 'pending', attempt = 0, lease_token = NULL, lease_owner = NULL,
          lease_expires_at = NULL, started_at = NULL WHERE id = $1`,
          [id],
        );
        await db.query('SELECT setval($1::regclass, $2)', ['baton.lease_token_seq', String(token - 1n)]);
      };
      const [held] = (await claimOn(plain, queue)).tokens;
      await forget(held!);
      // Unmarked: the same token again, so the stale holder's fenced writes would match.
      expect((await claimOn(plain, queue)).tokens).toEqual([held]);
      await forget(held!);

      // A session that starts after the "crash" marks itself first: its token is far past.
      const pool = markedPool();
      try {
        const marked = await pool.connect();
        try {
          const [next] = (await claimOn(marked, queue)).tokens;
          expect(next!).toBeGreaterThan(held! + BigInt(TOKEN_FLOOR_STEP));
        } finally {
          marked.release();
        }
      } finally {
        await pool.end();
      }
    } finally {
      plain.release();
    }
  });

  it('a mark that failed is sent again on a later checkout of the same session', async () => {
    const gate = `floor_gate_${process.pid}`;
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    pool.on('error', () => undefined);
    // A stand-in for the real mark that fails until the table exists (as the real one does
    // before migrations have created the schema).
    installTokenFloor(pool, { text: `SELECT set_config('baton_test.mark', 'yes', false) AS mark FROM ${gate}` });
    try {
      const read = async () => {
        const c = await pool.connect();
        try {
          return (await c.query<{ m: string | null }>(`SELECT current_setting('baton_test.mark', true) AS m`)).rows[0]!.m;
        } finally {
          c.release();
        }
      };
      expect(await read()).not.toBe('yes');
      await db.query(`CREATE TABLE ${gate} AS SELECT 1 AS one`);
      expect(await read()).toBe('yes');
    } finally {
      await pool.end();
      await db.query(`DROP TABLE IF EXISTS ${gate}`);
    }
  });

  it('before migrations the mark is a no-op, not an error; the first checkout after them marks the session', async () => {
    const empty = await createTestDatabase({ from: 'empty' });
    const pool = new pg.Pool({ connectionString: empty.url, max: 1 });
    pool.on('error', () => undefined);
    try {
      // An error here is what a first start against an empty database logged as a warning.
      const { rows } = await empty.query<{ mark: string | null }>(queries().tokenFloor.text);
      expect(rows[0]!.mark).toBeNull();
      expect((await empty.query(`SELECT current_setting('baton.token_floor', true) AS m`)).rows[0].m ?? '').toBe('');

      // What a daemon's first start does: the pool's only session migrates, then claims.
      installTokenFloor(pool, queries().tokenFloor);
      await migrate(pool, { schema: db.schema });
      const queue = fresh();
      await insertJob(pool, { queue });
      const client = await pool.connect();
      try {
        const { tokens, syncCommit } = await claimOn(client, queue);
        expect(syncCommit).toBe('off');
        expect(tokens[0]!).toBeGreaterThan(BigInt(TOKEN_FLOOR_STEP));
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
      await empty.drop();
    }
  });

  /** The token of one job run by a Baton on its own pool, and the sequence value before. */
  async function tokenOfOneJob(asyncClaims: boolean): Promise<{ before: bigint; token: bigint }> {
    const queue = fresh();
    const before = await sequenceValue();
    const token = deferred<string>();
    const baton = createBaton({
      connectionString: db.url,
      asyncClaims,
      queues: { [queue]: 1 },
      handlers: { work: (ctx) => token.resolve(ctx.token) },
    });
    await baton.start();
    try {
      await baton.enqueue({ queue, jobType: 'work' });
      return { before, token: BigInt(await token.promise) };
    } finally {
      await baton.stop();
    }
  }

  it("Baton's own pool claims past the floor, and does not advance it with asyncClaims off", async () => {
    const on = await tokenOfOneJob(true);
    expect(on.token).toBeGreaterThan(on.before + BigInt(TOKEN_FLOOR_STEP));
    const off = await tokenOfOneJob(false);
    expect(off.token).toBeLessThan(off.before + BigInt(TOKEN_FLOOR_STEP));
  });
});
