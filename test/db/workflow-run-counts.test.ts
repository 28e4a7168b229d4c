// The counts of workflow runs per name and state (migration 0029): whatever SQL writes the runs
// (inserts, finishes, cancels, replays, renames, new ids, deletes, TRUNCATE), folded or not,
// the scrape's statement reads what a scan of the runs counts, a live run whose job was
// dead-lettered included; two transactions deleting runs in opposite orders wait for nothing;
// the leader folds the deltas; and the scrape reads the live runs and the counts, not the
// history: with 20,000 finished runs it visits a few dozen rows.

import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { workflowFragments } from '../../src/db/pg/queries/workflow-fragments.ts';
import { workflowRunQueries } from '../../src/db/pg/queries/workflow-run.ts';
import { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { explainPrepared, rowsVisited } from '../helpers/plan-node.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
const schema = quoteSchema('baton');
const runs = workflowRunQueries(schema);
const { runState } = workflowFragments(schema);

type Count = { key: string; n: number };
const sorted = (rows: Count[]) => rows.sort((a, b) => a.key.localeCompare(b.key));

async function expectExact(): Promise<void> {
  const read = (await db.query<{ name: string; state: string; n: number }>(runs.countByState.text)).rows;
  const scanned = await db.query<Count>(
    `SELECT r.name || '/' || ${runState} AS key, count(*)::int AS n
     FROM baton.workflow_runs r LEFT JOIN baton.jobs j ON j.id = r.job_id GROUP BY 1`,
  );
  expect(sorted(read.map((r) => ({ key: `${r.name}/${r.state}`, n: r.n })))).toEqual(sorted(scanned.rows));
}

const fold = () => new PgWorkflowStore(db.pool, 'baton').workflowFoldRunCounts();
const deltas = async () => (await db.query('SELECT count(*)::int AS n FROM baton.workflow_run_count_deltas')).rows[0].n as number;

const STEPS: Array<[string, string]> = [
  [
    'runs inserted in every stored state',
    `INSERT INTO baton.workflow_runs (name, state, finished_at)
     SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, s.state, CASE WHEN s.state IN ('succeeded', 'cancelled') THEN now() END
     FROM generate_series(1, 60) g,
       LATERAL (SELECT (ARRAY['running', 'sleeping', 'waiting', 'succeeded', 'cancelled'])[1 + g % 5] AS state) s`,
  ],
  [
    'live runs finishing, several a statement',
    `UPDATE baton.workflow_runs SET state = 'succeeded', finished_at = now() WHERE state = 'running' AND id % 2 = 0`,
  ],
  [
    'live runs cancelled',
    `UPDATE baton.workflow_runs SET state = 'cancelled', finished_at = now() WHERE state IN ('sleeping', 'waiting') AND id % 3 = 0`,
  ],
  [
    'finished runs replayed',
    `UPDATE baton.workflow_runs SET state = 'running', finished_at = NULL WHERE state = 'cancelled' AND id % 2 = 0`,
  ],
  ['an update that changes no state', `UPDATE baton.workflow_runs SET progress = progress + 1`],
  ['finished runs renamed', `UPDATE baton.workflow_runs SET name = 'c' WHERE state = 'succeeded' AND id % 3 = 1`],
  ['finished runs given new ids', `UPDATE baton.workflow_runs SET id = DEFAULT WHERE state = 'succeeded' AND id % 5 = 0`],
  ['succeeded runs moved to cancelled', `UPDATE baton.workflow_runs SET state = 'cancelled' WHERE state = 'succeeded' AND id % 4 = 0`],
  [
    // Each reads as its job's state, beside finished runs stored in that state under the same name.
    'the driving jobs of live runs dead-lettered or cancelled',
    `WITH live AS (SELECT id, name FROM baton.workflow_runs WHERE state IN ('running', 'waiting') ORDER BY id LIMIT 8),
       j AS (INSERT INTO baton.jobs (job_type, payload, state, attempt, finished_at, dead_letter_reason)
         SELECT 'workflow:' || name, jsonb_build_object('runId', id::text), s.state, 1, now(),
           CASE WHEN s.state = 'dead_lettered' THEN 'attempts_exhausted' END
         FROM live, LATERAL (SELECT CASE WHEN id % 2 = 0 THEN 'dead_lettered' ELSE 'cancelled' END AS state) s
         RETURNING id, (payload->>'runId')::bigint AS run_id)
     UPDATE baton.workflow_runs r SET job_id = j.id FROM j WHERE r.id = j.run_id`,
  ],
  ['runs deleted', `DELETE FROM baton.workflow_runs WHERE id % 2 = 1`],
];

describe('counts of workflow runs', () => {
  it('stay exact through every kind of write, folded or not', async () => {
    for (const [i, [what, sql]] of STEPS.entries()) {
      await db.query(sql);
      // Every other step folds: the reader sums folded counts and deltas alike.
      if (i % 2 === 1) await fold();
      await expectExact().catch((err: Error) => {
        throw new Error(`after "${what}": ${err.message}`);
      });
    }
    // A rolled-back transaction changes nothing, its deltas included.
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`UPDATE baton.workflow_runs SET state = 'succeeded' WHERE state <> 'succeeded'`);
      const inside = await client.query('SELECT count(*)::int AS n FROM baton.workflow_run_count_deltas');
      expect(inside.rows[0].n).toBeGreaterThan(0);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    await expectExact();
    await db.query('TRUNCATE baton.workflow_runs CASCADE');
    await expectExact();
    const left = await db.query(
      'SELECT (SELECT count(*) FROM baton.workflow_run_counts)::int + (SELECT count(*) FROM baton.workflow_run_count_deltas)::int AS n',
    );
    expect(left.rows[0].n).toBe(0);
  });

  it('fold the deltas into the counts and remove a count at 0 at the next fold', async () => {
    await db.query(
      `INSERT INTO baton.workflow_runs (name, state, finished_at) VALUES ('z', 'succeeded', now()), ('z', 'succeeded', now())`,
    );
    expect(await deltas()).toBe(2);
    expect(await fold()).toBe(2);
    expect(await deltas()).toBe(0);
    await expectExact();
    await db.query(`DELETE FROM baton.workflow_runs WHERE name = 'z'`);
    expect(await fold()).toBe(2);
    await expectExact();
    const zRows = async () => (await db.query(`SELECT count(*)::int AS n FROM baton.workflow_run_counts WHERE name = 'z'`)).rows[0].n;
    expect(await zRows()).toBe(1);
    expect(await fold()).toBe(0);
    expect(await zRows()).toBe(0);
  });

  it('let two transactions delete finished runs in opposite orders without waiting for each other', async () => {
    // Runs go with their driving jobs (the row trigger of 0016), one statement per job.
    const jobs = await db.query<{ id: string; name: string }>(
      `WITH j AS (INSERT INTO baton.jobs (job_type, state, attempt, finished_at)
         SELECT 'workflow:' || n, 'succeeded', 1, now() FROM unnest(ARRAY['x', 'y', 'x', 'y']) n RETURNING id, job_type),
       r AS (INSERT INTO baton.workflow_runs (name, state, finished_at, job_id)
         SELECT substr(job_type, 10), 'succeeded', now(), id FROM j RETURNING job_id, name)
       SELECT job_id::text AS id, name FROM r ORDER BY job_id`,
    );
    const [x1, y1, x2, y2] = jobs.rows.map((r) => r.id);
    const one = new pg.Client({ connectionString: db.url });
    const two = new pg.Client({ connectionString: db.url });
    await Promise.all([one.connect(), two.connect()]);
    try {
      for (const c of [one, two]) await c.query(`BEGIN; SET LOCAL lock_timeout = '5s'`);
      const del = (c: pg.Client, id: string | undefined) => c.query('DELETE FROM baton.jobs WHERE id = $1', [id]);
      await del(one, x1);
      await del(two, y1);
      // Each would wait here on a counter row the other holds, if the deletes upserted counts.
      await del(one, y2);
      await del(two, x2);
      await Promise.all([one.query('COMMIT'), two.query('COMMIT')]);
    } finally {
      await Promise.all([one.end(), two.end()]);
    }
    await expectExact();
  });

  it('are emptied by a TRUNCATE under REPEATABLE READ, rows committed after its snapshot included', async () => {
    const [one, two] = [new pg.Client({ connectionString: db.url }), new pg.Client({ connectionString: db.url })];
    await Promise.all([one.connect(), two.connect()]);
    try {
      await one.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await one.query('SELECT count(*) FROM baton.workflow_runs');
      await two.query(`INSERT INTO baton.workflow_runs (name, state, finished_at) VALUES ('late', 'succeeded', now())`);
      await two.query(runs.foldCounts.text, [0]);
      await one.query('TRUNCATE baton.workflow_runs CASCADE');
      await one.query('COMMIT');
    } finally {
      await Promise.all([one.end(), two.end()]);
    }
    await expectExact();
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.workflow_run_counts`)).rows[0].n).toBe(0);
  });

  it('let a TRUNCATE of the runs go ahead of a scrape that waits for it', async () => {
    const [one, two] = [new pg.Client({ connectionString: db.url }), new pg.Client({ connectionString: db.url })];
    await Promise.all([one.connect(), two.connect()]);
    try {
      await one.query(`BEGIN; SET LOCAL lock_timeout = '10s'; LOCK baton.workflow_runs IN ACCESS EXCLUSIVE MODE`);
      const pid = (await two.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const scrape = two.query(runs.countByState.text);
      await waitFor(
        async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [pid])).rowCount === 1,
        { message: 'the scrape to wait on the lock' },
      );
      // With the counts locked first, the scrape would hold them while the trigger asks for them: a deadlock.
      await one.query('TRUNCATE baton.workflow_runs CASCADE');
      await one.query('COMMIT');
      expect((await scrape).rows).toEqual([]);
    } finally {
      await Promise.all([one.end(), two.end()]);
    }
  });

  it('fold one at a time: a fold that finds another under way folds nothing and does not wait', async () => {
    await db.query(`INSERT INTO baton.workflow_runs (name, state, finished_at) VALUES ('one', 'succeeded', now())`);
    const one = await db.pool.connect();
    try {
      await one.query('BEGIN');
      expect((await one.query<{ n: number }>(runs.foldCounts.text, [77])).rows[0]!.n).toBe(1);
      await db.query(`INSERT INTO baton.workflow_runs (name, state, finished_at) VALUES ('two', 'succeeded', now())`);
      expect((await db.query<{ n: number }>(runs.foldCounts.text, [77])).rows[0]!.n).toBe(0);
      await one.query('COMMIT');
    } finally {
      one.release();
    }
    expect(await fold()).toBe(1);
    await expectExact();
  });

  it('are read without reading the history', async () => {
    await db.query('TRUNCATE baton.workflow_runs CASCADE');
    await db.query(
      `INSERT INTO baton.workflow_runs (name, state, finished_at)
       SELECT 'wf', CASE WHEN g % 100 = 0 THEN 'cancelled' ELSE 'succeeded' END, now() FROM generate_series(1, 20000) g`,
    );
    await db.query(`INSERT INTO baton.workflow_runs (name) SELECT 'wf' FROM generate_series(1, 5)`);
    await fold();
    await db.query('ANALYZE baton.workflow_runs');
    await expectExact();
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      const plan = await explainPrepared(db.pool, runs.countByState.text, [], mode);
      expect(rowsVisited(plan), mode).toBeLessThanOrEqual(100);
    }
  });
});

describe('the leader', () => {
  const batons: Array<ReturnType<typeof createBaton>> = [];
  afterAll(async () => {
    await Promise.all(batons.map((b) => b.stop()));
  });

  it('folds the deltas once it leads', async () => {
    await db.query(
      `INSERT INTO baton.workflow_runs (name, state, finished_at) SELECT 'lead', 'succeeded', now() FROM generate_series(1, 3)`,
    );
    expect(await deltas()).toBeGreaterThan(0);
    const baton = createBaton({ connectionString: db.url, poolSize: 2, queues: {} });
    batons.push(baton);
    await baton.start();
    await waitFor(async () => (await deltas()) === 0, { message: 'the deltas to be folded' });
    await expectExact();
  });
});
