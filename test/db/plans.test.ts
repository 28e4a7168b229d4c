// Query plans of the hot writes under the statistics production tables really have:
// ANALYZE ran while every job was pending, then a thousand leases went live. Each lease
// write (start, heartbeat, complete, fail, release) must touch its own batch's rows by
// primary key, whatever the plan cache picks (generic or custom), never scan the live
// leases once per batch row; the reaper reads expired leases through the expiry index (a
// sweep with nothing to do reads next to nothing), and the claim picks through the claim
// index and updates the rows it picked by primary key.
// Read from EXPLAIN ANALYZE: the indexes used and the rows visited per statement.

import { beforeAll, describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { jobQueries } from '../../src/db/pg/queries/job.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { explainPrepared, jobScans, type PlanNode, rowsVisited } from '../helpers/plan-node.ts';

const db = useTestDatabase();
const q = jobQueries(quoteSchema('baton'));
const BATCH = 200;
const LIVE_RUNNING = 800;

let running: { ids: string[]; tokens: string[] };
let leased: { ids: string[]; tokens: string[] };
/** Running leases outside `running`, for the completions of a few leases. */
let few: { ids: string[]; tokens: string[] };
/** A completion of up to SIZE_IN_TEXT_MAX leases is named, its ids written out (batchIds). */
const FEW = 20;

beforeAll(async () => {
  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'plan.test' FROM generate_series(1, 3000)`);
  // The statistics say: no live lease at all.
  await db.query('ANALYZE baton.jobs');
  const ex = new PgExecutor(db.pool, quoteSchema('baton'));
  const claim = (limit: number, intoRunning: boolean) => ex.jobClaim({ queue: 'q', limit, owner: 'w-plan', leaseMs: 60_000, intoRunning });
  const r = await claim(LIVE_RUNNING, true);
  const l = await claim(BATCH, false);
  running = { ids: r.slice(0, BATCH).map((j) => j.id), tokens: r.slice(0, BATCH).map((j) => j.token) };
  leased = { ids: l.map((j) => j.id), tokens: l.map((j) => j.token) };
  few = { ids: r.slice(BATCH, BATCH + FEW).map((j) => j.id), tokens: r.slice(BATCH, BATCH + FEW).map((j) => j.token) };
});

const bigints = (xs: string[]) => `'{${xs.join(',')}}'::bigint[]`;
const fill = (value: string, type: string) => `array_fill(${value}::${type}, ARRAY[${BATCH}])`;

/** Each statement with the EXECUTE arguments of one batch of BATCH leases (read once the leases exist). */
const STATEMENTS: Record<string, () => [text: string, args: string[]]> = {
  'start (markRunningMany)': () => [q.markRunningMany.text, [bigints(leased.ids), bigints(leased.tokens)]],
  heartbeat: () => [q.heartbeatMany.text, [bigints(running.ids), bigints(running.tokens), '60000']],
  complete: () => [q.completeMany.open.text, [bigints(running.ids), bigints(running.tokens), fill(`'{"ok":true}'`, 'jsonb')]],
  'complete, blocks known': () => [
    q.completeManyBlocksKnown.open.text,
    [bigints(running.ids), bigints(running.tokens), fill(`'{"ok":true}'`, 'jsonb')],
  ],
  fail: () => [
    q.failMany.text,
    [bigints(running.ids), bigints(running.tokens), fill(`'{"message":"boom"}'`, 'jsonb'), '100', '1000', fill('false', 'boolean')],
  ],
  release: () => [q.releaseMany.text, [bigints(running.ids), bigints(running.tokens), 'true']],
};

/** The UPDATE itself (lease writes that answer with one row run it in a CTE). */
function modifyTable(n: PlanNode): PlanNode | undefined {
  if (n['Node Type'] === 'ModifyTable') return n;
  for (const c of n.Plans ?? []) {
    const found = modifyTable(c);
    if (found) return found;
  }
  return undefined;
}

const explain = (text: string, args: string[], mode: string): Promise<PlanNode> => explainPrepared(db.pool, text, args, mode);

describe.each(['force_generic_plan', 'force_custom_plan'])('lease writes with stale statistics (%s)', (mode) => {
  it.each(Object.keys(STATEMENTS))('%s touches its batch by primary key, not every live lease', async (name) => {
    const [text, args] = STATEMENTS[name]!();
    const plan = await explain(text, args, mode);
    // It did its work: one row written per lease of the batch.
    expect(modifyTable(plan)?.['Actual Rows']).toBe(BATCH);
    for (const scan of jobScans(plan)) expect(scan['Index Name']).toBe('jobs_pkey');
    // A few visits per batch row (the complete reads its written rows once more to count them
    // per queue and once more for their blocks); scanning the 1,000 live leases once per batch row would be 200,000.
    expect(rowsVisited(plan)).toBeLessThanOrEqual(7 * BATCH);
  });
});

describe.each(['force_generic_plan', 'force_custom_plan'])('completions of a few leases, named, with stale statistics (%s)', (mode) => {
  it.each([
    ['complete', () => q.completeMany(FEW).text],
    ['complete, blocks known', () => q.completeManyBlocksKnown(FEW).text],
  ])('%s touches its batch by primary key', async (_, text) => {
    const plan = await explain(text(), [bigints(few.ids), bigints(few.tokens), 'NULL'], mode);
    expect(modifyTable(plan)?.['Actual Rows']).toBe(FEW);
    for (const scan of jobScans(plan)) expect(scan['Index Name']).toBe('jobs_pkey');
    expect(rowsVisited(plan)).toBeLessThanOrEqual(7 * FEW);
  });
});

describe('the reaper with stale statistics', () => {
  it.each(['force_generic_plan', 'force_custom_plan'])(
    'finds expired leases through the expiry index without reading the live ones (%s)',
    async (mode) => {
      const plan = await explain(q.reap.text, ['100', '1000', 'true'], mode);
      const scans = jobScans(plan);
      expect(scans.length).toBeGreaterThan(0);
      expect(scans.map((s) => s['Node Type'])).not.toContain('Seq Scan');
      expect(scans.map((s) => s['Index Name'])).toContain('jobs_lease_expiry_idx');
      // Nothing has expired and no worker is gone: nothing reaped, and the 1,000 live leases
      // were not read one by one to find that out.
      expect(plan['Actual Rows']).toBe(0);
      expect(rowsVisited(plan)).toBeLessThan(50);
    },
  );
});

describe('the claim with stale statistics', () => {
  // A claim of up to CLAIM_LIMIT_IN_TEXT_MAX jobs carries its limit in the text (claimLimit).
  const SMALL = 20;
  it.each([
    ['force_generic_plan', BATCH],
    ['force_custom_plan', BATCH],
    ['force_generic_plan', SMALL],
  ] as const)('picks through the claim index and updates the picked rows by primary key (%s, %i jobs)', async (mode, batch) => {
    const plan = await explain(q.claim(batch).text, [`'q'`, String(batch), `'w-plan'`, 'true', '60000'], mode);
    expect(modifyTable(plan)?.['Actual Rows']).toBe(batch);
    const scans = jobScans(plan);
    expect(scans.map((s) => s['Index Name'] ?? s['Node Type']).sort()).toEqual(['jobs_claim_idx', 'jobs_pkey']);
    // Each scan reads a batch of rows: the pick the first pending ones, the update those it picked.
    for (const scan of scans) expect(scan['Actual Rows'] * scan['Actual Loops'] + (scan['Rows Removed by Filter'] ?? 0)).toBe(batch);
  });
});

describe('the owned-lease read of the stranded-lease sweep with stale statistics', () => {
  it.each(['force_generic_plan', 'force_custom_plan'])(
    'reads live leases through the expiry index, not the whole table (%s)',
    async (mode) => {
      const plan = await explain(q.leasesOwned.text, [`'w-plan'`], mode);
      expect(plan['Actual Rows']).toBe(LIVE_RUNNING + BATCH);
      const scans = jobScans(plan);
      expect(scans.map((s) => s['Index Name'] ?? s['Node Type'])).toEqual(['jobs_lease_expiry_idx']);
      // The live leases and nothing else (3,000 rows, 2,000 of them pending, are in the table).
      expect(rowsVisited(plan)).toBeLessThanOrEqual(2 * (LIVE_RUNNING + BATCH));
    },
  );
});

describe("the completion's probe of finished_blocks next to a large map", () => {
  it.each([
    ['force_generic_plan', BATCH],
    ['force_custom_plan', BATCH],
    ['force_generic_plan', FEW],
  ] as const)('probes the map by its index, once per block, never a scan of it (%s, %i leases)', async (mode, size) => {
    const batch = size === BATCH ? running : few;
    // 50,000 blocks of other queues (12.8 million ids of history), with statistics.
    await db.query(`INSERT INTO baton.finished_blocks (queue, block) SELECT 'old-' || (g % 50), g FROM generate_series(1, 50000) g`);
    await db.query('ANALYZE baton.finished_blocks');
    try {
      const plan = await explain(q.completeMany(size).text, [bigints(batch.ids), bigints(batch.tokens), 'NULL'], mode);
      const mapScans: PlanNode[] = [];
      const visit = (n: PlanNode) => {
        if (n['Relation Name'] === 'finished_blocks' && /Scan/.test(n['Node Type'])) mapScans.push(n);
        for (const c of n.Plans ?? []) visit(c);
      };
      visit(plan);
      expect(mapScans.length).toBeGreaterThan(0);
      for (const scan of mapScans) expect(scan['Node Type']).not.toBe('Seq Scan');
      // One probe per distinct block of the batch (its 200 jobs lie in a block or two).
      expect(Math.max(...mapScans.map((n) => n['Actual Loops'] ?? 0))).toBeLessThanOrEqual(3);
    } finally {
      await db.query(`DELETE FROM baton.finished_blocks WHERE queue LIKE 'old-%'`);
    }
  });
});

describe('the retention walk with stale statistics', () => {
  it.each(['force_generic_plan', 'force_custom_plan'])(
    'reads one batch of the primary key in id order, not the table (%s)',
    async (mode) => {
      const epoch = await takeLeaderLease(db.pool);
      const plan = await explain(q.purgeScan.text, ["'0'", '100', '0', 'NULL', 'NULL', epoch, '0'], mode);
      const scans = jobScans(plan);
      expect(scans.map((s) => s['Node Type'])).not.toContain('Seq Scan');
      expect(scans.map((s) => s['Index Name'])).toContain('jobs_pkey');
      // A batch of 100 of the 3,000 rows, read once from the table and a few times over from
      // the statement's CTEs (about 900 visits in all here).
      expect(rowsVisited(plan)).toBeLessThan(1_200);
    },
  );
});
