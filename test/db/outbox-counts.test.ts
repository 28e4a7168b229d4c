// The counts of published and dead-lettered outbox messages (migration 0028): whatever SQL
// writes the table (inserts, state changes, moves to another tenant or destination, new ids,
// deletes, TRUNCATE, several rows a statement), the counts the scrape reads equal a count of the
// table itself; and the scrape's statement reads the counts and the pending rows, not the
// history: with 20,000 published messages it visits a few dozen rows.

import { describe, expect, it } from 'vitest';
import { outboxQueries } from '../../src/db/pg/queries/outbox.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { explainPrepared, rowsVisited } from '../helpers/plan-node.ts';

const db = useTestDatabase();
const outbox = outboxQueries(quoteSchema('baton'));

type Count = { key: string; n: number };
const sorted = (rows: Count[]) => rows.filter((r) => r.n !== 0).sort((a, b) => a.key.localeCompare(b.key));

/** The messages per destination and state, for every tenant or for one, as the scrape reads them and as a scan counts them. */
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
  for (const tenant of [null, 'acme', 'default']) {
    const o = await outboxCounts(tenant);
    expect(o.read, `tenant ${tenant}`).toEqual(o.scanned);
  }
}

const STEPS: Array<[string, string]> = [
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
  ['an update that changes no state', `UPDATE baton.outbox SET attempt = attempt + 1`],
  [
    'finished messages moved to another tenant and destination',
    `UPDATE baton.outbox SET tenant_id = 'acme', destination = 'mail' WHERE state = 'published' AND id % 3 = 1`,
  ],
  [
    'finished messages given new ids',
    `UPDATE baton.outbox SET id = DEFAULT, state = 'dead_lettered', dead_letter_reason = 'rejected' WHERE state = 'published' AND id % 5 = 0`,
  ],
  ['messages purged', `DELETE FROM baton.outbox WHERE state = 'published' AND id % 2 = 1`],
];

describe('counts of published and dead-lettered messages', () => {
  it('stay exact through every kind of write', async () => {
    for (const [what, sql] of STEPS) {
      await db.query(sql);
      await expectExact().catch((err: Error) => {
        throw new Error(`after "${what}": ${err.message}`);
      });
    }
    // A failed statement changes nothing, counts included.
    await expect(db.query(`UPDATE baton.outbox SET state = 'published', finished_at = now(), max_attempts = NULL`)).rejects.toThrow();
    await expectExact();
    await db.query('TRUNCATE baton.outbox');
    await expectExact();
    expect((await db.query('SELECT count(*)::int AS n FROM baton.outbox_counts')).rows[0].n).toBe(0);
  });

  it('are read without reading the history', async () => {
    await db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts, state, finished_at)
       SELECT 'hooks', 't', 'h' || g, 5, 'published', now() FROM generate_series(1, 20000) g`,
    );
    await db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) SELECT 'hooks', 't', 'p' || g, 5 FROM generate_series(1, 5) g`,
    );
    await db.query('ANALYZE baton.outbox');
    await expectExact();
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      for (const tenant of ['NULL', "'default'"]) {
        const o = await explainPrepared(db.pool, outbox.stats.text, [tenant], mode);
        expect(rowsVisited(o), `outbox ${tenant}, ${mode}`).toBeLessThanOrEqual(100);
      }
    }
  });
});
