// The counts of finished workflow runs and outbox messages (migration 0028): whatever SQL writes
// the tables (inserts, state changes, renames, deletes, TRUNCATE, several rows a statement), the
// counts the scrape reads equal a count of the tables themselves; and the scrape's statements read
// the counts and the live rows, not the history: with 20,000 finished runs and as many published
// messages they visit a few dozen rows.

import { describe, expect, it } from 'vitest';
import { outboxQueries } from '../../src/db/pg/queries/outbox.ts';
import { workflowRunQueries } from '../../src/db/pg/queries/workflow-run.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { explainPrepared, rowsVisited } from '../helpers/plan-node.ts';

const db = useTestDatabase();
const runs = workflowRunQueries(quoteSchema('baton'));
const outbox = outboxQueries(quoteSchema('baton'));

type Count = { key: string; n: number };
const sorted = (rows: Count[]) => rows.filter((r) => r.n !== 0).sort((a, b) => a.key.localeCompare(b.key));

/** The runs per workflow and reader state, as the scrape reads them, and as a scan counts them. */
async function runCounts(): Promise<{ read: Count[]; scanned: Count[] }> {
  const read = (await db.query<{ name: string; state: string; n: number }>(runs.countByState.text)).rows;
  const scanned = (
    await db.query<{ key: string; n: number }>(
      `SELECT r.name || '/' || CASE WHEN r.state IN ('running', 'sleeping', 'waiting') AND j.state IN ('dead_lettered', 'cancelled')
         THEN j.state ELSE r.state END AS key, count(*)::int AS n
       FROM baton.workflow_runs r LEFT JOIN baton.jobs j ON j.id = r.job_id GROUP BY 1`,
    )
  ).rows;
  return { read: sorted(read.map((r) => ({ key: `${r.name}/${r.state}`, n: r.n }))), scanned: sorted(scanned) };
}

/** The messages per destination and state, for every tenant and for one, read and scanned. */
async function outboxCounts(tenant: string | null): Promise<{ read: Count[]; scanned: Count[] }> {
  const [row] = (await db.query<{ counts: Array<{ destination: string; state: string; n: number }> }>(outbox.stats.text, [tenant])).rows;
  const scanned = (
    await db.query<{ key: string; n: number }>(
      `SELECT destination || '/' || state AS key, count(*)::int AS n FROM baton.outbox
       WHERE $1::text IS NULL OR tenant_id = $1 GROUP BY 1`,
      [tenant],
    )
  ).rows;
  return { read: sorted(row!.counts.map((c) => ({ key: `${c.destination}/${c.state}`, n: c.n }))), scanned: sorted(scanned) };
}

async function expectExact(): Promise<void> {
  const r = await runCounts();
  expect(r.read).toEqual(r.scanned);
  for (const tenant of [null, 'acme', 'default']) {
    const o = await outboxCounts(tenant);
    expect(o.read, `tenant ${tenant}`).toEqual(o.scanned);
  }
}

describe('counts of finished runs and messages', () => {
  it('stay exact through every kind of write', async () => {
    const steps: Array<[string, string]> = [
      [
        'runs inserted live and finished',
        `INSERT INTO baton.workflow_runs (name, state, finished_at)
        SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, (ARRAY['running', 'sleeping', 'succeeded', 'cancelled'])[1 + g % 4],
          CASE WHEN g % 4 >= 2 THEN now() END FROM generate_series(1, 40) g`,
      ],
      [
        'runs finished, several a statement',
        `UPDATE baton.workflow_runs SET state = 'succeeded', finished_at = now() WHERE state = 'running' AND id % 3 = 0`,
      ],
      [
        'a finished run back to live (replay)',
        `UPDATE baton.workflow_runs SET state = 'running', finished_at = NULL WHERE id = (SELECT min(id) FROM baton.workflow_runs WHERE state = 'cancelled')`,
      ],
      ['finished runs renamed', `UPDATE baton.workflow_runs SET name = 'c' WHERE name = 'a' AND state = 'succeeded' AND id % 2 = 0`],
      ['an update that changes no state', `UPDATE baton.workflow_runs SET progress = progress + 1`],
      [
        'a live run ended through its job',
        `WITH j AS (INSERT INTO baton.jobs (queue, job_type, state, finished_at, dead_letter_reason)
        VALUES ('wf', 'workflow:b', 'dead_lettered', now(), 'attempts_exhausted') RETURNING id)
        UPDATE baton.workflow_runs SET job_id = (SELECT id FROM j) WHERE id = (SELECT max(id) FROM baton.workflow_runs WHERE state = 'sleeping')`,
      ],
      ['finished runs deleted', `DELETE FROM baton.workflow_runs WHERE state = 'succeeded' AND id % 5 = 0`],
      [
        'messages inserted in every state',
        `INSERT INTO baton.outbox (tenant_id, destination, topic, message_key, max_attempts, state, finished_at, dead_letter_reason)
        SELECT CASE WHEN g % 3 = 0 THEN 'acme' ELSE 'default' END, CASE WHEN g % 2 = 0 THEN 'hooks' ELSE 'nats' END, 't', 'k' || g, 5,
          s.state, CASE WHEN s.state <> 'pending' THEN now() END, CASE WHEN s.state = 'dead_lettered' THEN 'attempts_exhausted' END
        FROM generate_series(1, 60) g, LATERAL (SELECT (ARRAY['pending', 'published', 'dead_lettered'])[1 + g % 3] AS state) s`,
      ],
      [
        'messages published, several a statement',
        `UPDATE baton.outbox SET state = 'published', finished_at = now() WHERE state = 'pending' AND id % 2 = 0`,
      ],
      [
        'dead letters replayed',
        `UPDATE baton.outbox SET state = 'pending', finished_at = NULL, dead_letter_reason = NULL WHERE state = 'dead_lettered' AND id % 4 = 0`,
      ],
      [
        'finished messages moved to another tenant and destination',
        `UPDATE baton.outbox SET tenant_id = 'acme', destination = 'mail' WHERE state = 'published' AND id % 3 = 1`,
      ],
      ['messages purged', `DELETE FROM baton.outbox WHERE state = 'published' AND id % 2 = 1`],
    ];
    for (const [what, sql] of steps) {
      await db.query(sql);
      await expectExact().catch((err: Error) => {
        throw new Error(`after "${what}": ${err.message}`);
      });
    }
    // A failed statement changes nothing, counts included.
    await expect(db.query(`UPDATE baton.outbox SET state = 'published', finished_at = now(), max_attempts = NULL`)).rejects.toThrow();
    await expectExact();
    await db.query('TRUNCATE baton.outbox');
    await db.query('TRUNCATE baton.jobs, baton.workflow_runs CASCADE');
    await expectExact();
    expect((await db.query('SELECT count(*)::int AS n FROM baton.workflow_run_counts')).rows[0].n).toBe(0);
  });

  it('are read without reading the history', async () => {
    await db.query(
      `INSERT INTO baton.workflow_runs (name, state, finished_at) SELECT 'h', 'succeeded', now() FROM generate_series(1, 20000)`,
    );
    await db.query(`INSERT INTO baton.workflow_runs (name, state) SELECT 'h', 'running' FROM generate_series(1, 5)`);
    await db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts, state, finished_at)
       SELECT 'hooks', 't', 'h' || g, 5, 'published', now() FROM generate_series(1, 20000) g`,
    );
    await db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) SELECT 'hooks', 't', 'p' || g, 5 FROM generate_series(1, 5) g`,
    );
    await db.query('ANALYZE baton.workflow_runs');
    await db.query('ANALYZE baton.outbox');
    await expectExact();
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      const r = await explainPrepared(db.pool, runs.countByState.text, [], mode);
      expect(rowsVisited(r), `runs, ${mode}`).toBeLessThanOrEqual(100);
      for (const tenant of ['NULL', "'default'"]) {
        const o = await explainPrepared(db.pool, outbox.stats.text, [tenant], mode);
        expect(rowsVisited(o), `outbox ${tenant}, ${mode}`).toBeLessThanOrEqual(100);
      }
    }
  });
});
