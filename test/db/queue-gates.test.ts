// The gates of queues (migration 0032) follow paused_queues, flow_queues and tenant_queues
// whatever SQL writes them (insert, delete, a renamed queue, TRUNCATE, a rollback), so the
// claims' one probe answers what their three probes answered; and the claims obey them: a
// paused or controlled queue gives the plain and FIFO claims nothing, a tenanted one sends
// the engine's plain claim to the fair one.

import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();
const executor = () => new PgExecutor(db.pool, quoteSchema('baton'));

type Gate = { queue: string; reason: string };

/** What the three tables say, one row per queue and reason. */
async function derived(): Promise<Gate[]> {
  return (
    await db.query<Gate>(
      `SELECT DISTINCT queue, reason FROM (
         SELECT queue, 'paused' AS reason FROM baton.paused_queues
         UNION ALL SELECT queue, 'controlled' FROM baton.flow_queues
         UNION ALL SELECT queue, 'tenanted' FROM baton.tenant_queues) s
       ORDER BY queue, reason`,
    )
  ).rows;
}

async function gates(): Promise<Gate[]> {
  return (await db.query<Gate>('SELECT DISTINCT queue, reason FROM baton.queue_gates ORDER BY queue, reason')).rows;
}

async function expectFollowing(): Promise<void> {
  expect(await gates()).toEqual(await derived());
}

const WRITES: Array<[string, string]> = [
  ['pause', `INSERT INTO baton.paused_queues (queue) VALUES ('a'), ('b')`],
  ['control', `INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ('a', 2), ('c', 1)`],
  ['first job of another tenant', `INSERT INTO baton.jobs (queue, tenant_id, job_type) VALUES ('d', 'acme', 't')`],
  ['a second mark of the same queue', `INSERT INTO baton.tenant_queues (queue) VALUES ('d')`],
  ['flow limits changed, the row kept', `UPDATE baton.flow_queues SET concurrency_limit = 3 WHERE queue = 'a'`],
  ['a paused queue renamed', `UPDATE baton.paused_queues SET queue = 'b2' WHERE queue = 'b'`],
  ['resume', `DELETE FROM baton.paused_queues WHERE queue = 'a'`],
  [
    'one of two marks deleted',
    `DELETE FROM baton.tenant_queues WHERE ctid = (SELECT min(ctid) FROM baton.tenant_queues WHERE queue = 'd')`,
  ],
  ['a controlled queue renamed', `UPDATE baton.flow_queues SET queue = 'c2' WHERE queue = 'c'`],
  ['the last mark deleted', `DELETE FROM baton.tenant_queues WHERE queue = 'd'`],
  ['truncate paused', `TRUNCATE baton.paused_queues`],
  ['truncate flow', `TRUNCATE baton.flow_queues`],
];

describe('queue gates', () => {
  it('follow the three tables through every kind of write', async () => {
    await expectFollowing();
    for (const [what, sql] of WRITES) {
      await db.query(sql);
      await expectFollowing().catch((err: Error) => {
        throw new Error(`after ${what}: ${err.message}`);
      });
    }
    // Every write above changed something: the gates are empty only at the end.
    expect(await gates()).toEqual([]);
  });

  it('a rolled back pause leaves no gate', async () => {
    const c = await db.pool.connect();
    try {
      await c.query('BEGIN');
      await c.query(`INSERT INTO baton.paused_queues (queue) VALUES ('r')`);
      expect((await c.query(`SELECT count(*)::int AS n FROM baton.queue_gates WHERE queue = 'r'`)).rows[0].n).toBe(1);
      await c.query('ROLLBACK');
    } finally {
      c.release();
    }
    expect(await gates()).toEqual([]);
  });

  it('a paused or controlled queue gives the plain and FIFO claims nothing; a tenanted one sends the plain claim on', async () => {
    const ex = executor();
    const lease = (queue: string) => ({ queue, limit: 5, owner: 'w', leaseMs: 30_000, intoRunning: true });
    const claimPlain = (queue: string) =>
      ex.jobClaimFlow({
        ...lease(queue),
        fair: true,
        controlled: false,
        cursor: { tenant: '', used: 0 },
        keyCursor: '',
        solo: false,
        plain: true,
      });
    const claimBoth = async (queue: string) => {
      const fifo = await ex.jobClaim(lease(queue));
      const plain = await claimPlain(queue);
      return { fifo: fifo.length, plain: plain.jobs.length, stillPlain: plain.plain };
    };
    const enqueue = (queue: string, tenant = 'default') =>
      db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type) SELECT $1, $2, 't' FROM generate_series(1, 4)`, [queue, tenant]);

    await enqueue('p');
    await db.query(`INSERT INTO baton.paused_queues (queue) VALUES ('p')`);
    expect(await claimBoth('p')).toEqual({ fifo: 0, plain: 0, stillPlain: true });
    await db.query(`DELETE FROM baton.paused_queues WHERE queue = 'p'`);
    expect(await claimBoth('p')).toMatchObject({ fifo: 4 });

    await enqueue('f');
    await db.query(`INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ('f', 1)`);
    expect(await claimBoth('f')).toEqual({ fifo: 0, plain: 0, stillPlain: true });

    // Another tenant's job marks the queue: the plain claim takes nothing and says so; the
    // fair claim it hands over to takes them all.
    await enqueue('t', 'acme');
    const plain = await claimPlain('t');
    expect(plain.jobs).toHaveLength(4);
    expect(plain.plain).toBe(false);
  });
});
