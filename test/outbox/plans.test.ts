// Query plans of the write that claims a key's next run, next to a long backlog on that key,
// whatever the plan cache picks (generic or custom): with statistics taken while everything
// was pending it reads about a batch of rows; with none at all (a fresh table) it may read the
// pending rows once, but runs no step once per due message. Read from EXPLAIN ANALYZE in a
// rolled-back transaction.

import { beforeAll, describe, expect, it } from 'vitest';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import { outboxQueries } from '../../src/db/pg/queries/outbox.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { explainPrepared, type PlanNode, rowsVisited } from '../helpers/plan-node.ts';

const db = useTestDatabase();
const q = outboxQueries(quoteSchema('baton'));
const BACKLOG = 5_000;
const BATCH = 100;

const explain = (text: string, args: string[], mode: string): Promise<PlanNode> => explainPrepared(db.pool, text, args, mode);
const array = (xs: Array<string | number | boolean>, type: string) => `'{${xs.join(',')}}'::${type}[]`;

/** A one-key backlog of `n`, plus `others` unkeyed messages of another destination in the due index. */
async function backlog(n: number, others: number): Promise<void> {
  await db.query('TRUNCATE baton.outbox');
  await db.query(
    `INSERT INTO baton.outbox (destination, topic, message_key, ordering_key, max_attempts)
     SELECT 'hooks', 't', 'k' || g, 'one', 5 FROM generate_series(1, $1::int) g`,
    [n],
  );
  await db.query(
    `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts)
     SELECT 'elsewhere', 't', 'u' || g, 5 FROM generate_series(1, $1::int) g`,
    [others],
  );
}

beforeAll(async () => {
  // The statistics are the test's to choose.
  await db.query('ALTER TABLE baton.outbox SET (autovacuum_enabled = false)');
});

/** The most times any node of the plan ran. */
const maxLoops = (n: PlanNode): number => Math.max(n['Actual Loops'], ...(n.Plans ?? []).map(maxLoops));

async function explainNextWrite(mode: string): Promise<PlanNode> {
  const { claimed, runs } = await new PgOutboxStore(db.pool, '"baton"').outboxClaim({
    destinations: ['hooks'],
    limit: BATCH,
    visibilityMs: 60_000,
  });
  const [head] = claimed;
  const items = [head!, ...runs.get(head!.id)!];
  expect(items).toHaveLength(BATCH);
  const plan = await explain(
    q.publishedManyClaimNext.text,
    [
      array(
        items.map((m) => m.id),
        'bigint',
      ),
      array(
        items.map((m) => m.attempt),
        'integer',
      ),
      array(
        items.map((m) => m.replayCount),
        'integer',
      ),
      array(
        items.map((_, i) => i > 0),
        'boolean',
      ),
      String(BATCH),
      '60000',
    ],
    mode,
  );
  // Its work: the batch written, then the next head and its run returned.
  expect(plan['Actual Rows']).toBe(2 * BATCH);
  return plan;
}

describe.each(['force_generic_plan', 'force_custom_plan'])("the write that claims a key's next run (%s)", (mode) => {
  it('with statistics taken while all was pending, reads about a batch of rows, not the backlog', async () => {
    await backlog(BACKLOG, 1_000);
    await db.query('ANALYZE baton.outbox');
    const plan = await explainNextWrite(mode);
    // Every step reads the written batch or the next one, a few times over; the backlog behind
    // is 4,900 messages, and reading it once per written row would be ~500,000.
    expect(rowsVisited(plan)).toBeLessThan(30 * BATCH);
  });

  it('with no statistics at all (a fresh table), runs no step once per due message', async () => {
    // The bench's case: a fresh database, 1,000 messages of one key.
    await db.query(`DELETE FROM pg_statistic WHERE starelid = 'baton.outbox'::regclass`);
    await backlog(1_000, 0);
    const plan = await explainNextWrite(mode);
    // A plan driven from the due messages looked the next head up once per due row (5,000
    // loops, 0.1-0.5 s); reading the pending rows once is what a table without statistics may cost.
    expect(maxLoops(plan)).toBeLessThanOrEqual(BATCH);
  });
});
