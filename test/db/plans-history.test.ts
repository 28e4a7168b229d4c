// Reads of live work next to a large history: a table of finished jobs (written directly, not
// run, with the counters of finished jobs set as the engine's statements would have) and a little live work, some of it as old as the history. Each admin read (counts by
// queue, listings by state, queue and tenant, dead letters, capped totals; listings sorted by any
// key or filtered by creation time or due, and their counts: job-list.ts), the due-job read of
// the health gauges, the flow snapshot's live work (/metrics, /api/flow), the stats snapshot (/api/stats) and the claim must read the live rows and the page asked for, through the
// partial index its filters fit, never scan the history: without statistics, with analyzed
// statistics, in custom and in generic plans (what a connection's plan cache settles on).
// Read from EXPLAIN ANALYZE: the scans of jobs and the rows they visited.

import { beforeAll, describe, expect, it } from 'vitest';
import { flowQueries } from '../../src/db/pg/queries/flow-control.ts';
import { healthQueries } from '../../src/db/pg/queries/health.ts';
import { jobQueries } from '../../src/db/pg/queries/job.ts';
import { ID_RANGE_OPEN, jobListQueries } from '../../src/db/pg/queries/job-list.ts';
import { jobReadQueries, LIST_WINDOW_ROWS, type ListShape } from '../../src/db/pg/queries/job-read.ts';
import { STATS_SCAN_ROWS, statsQueries } from '../../src/db/pg/queries/stats.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { JOB_SORT_WINDOW, type JobSortKey, type SortOrder } from '../../src/types/job-sort.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { explainPrepared, indexesUsed, jobScans, type PlanNode, rowsVisited } from '../helpers/plan-node.ts';

const db = useTestDatabase();
const schema = quoteSchema('baton');
const jq = jobQueries(schema);
const rq = jobReadQueries(schema);
const hq = healthQueries(schema);
const fq = flowQueries(schema);
const lq = jobListQueries(schema);
const sq = statsQueries(schema);
/** Finished jobs in the history. Every read below must visit far fewer rows than this. */
const HISTORY = 100_000;
/** What any read may visit: the live rows, a page, a capped count's cap, and some slack. */
const BUDGET = 3_000;
const CAP = 1_000;

beforeAll(async () => {
  // Autovacuum's ANALYZE would take the "no statistics" case away.
  await db.query('ALTER TABLE baton.jobs SET (autovacuum_enabled = false)');
  // Old live work first: delayed pending jobs and a running one, under the whole history.
  await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type, run_at)
    SELECT 'hot', 'big', 'old', now() + interval '1 day' FROM generate_series(1, 5)`);
  await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type, state, attempt, lease_token, lease_owner, lease_expires_at, started_at)
    VALUES ('hot', 'big', 'old', 'running', 1, 1, 'w', now() + interval '1 hour', now())`);
  // A rare queue and tenant, finished early: their rows are buried under the history.
  await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type, state, finished_at, dead_letter_reason)
    SELECT 'rare', 'small', 'x', CASE WHEN g % 2 = 0 THEN 'succeeded' ELSE 'dead_lettered' END, now(),
      CASE WHEN g % 2 = 1 THEN 'terminal_error' END
    FROM generate_series(1, 10) g`);
  // The history: succeeded, with a dead letter or a cancellation in every hundred; of the
  // default tenant, as an application's jobs are when it has no tenant keys.
  await db.query(
    `INSERT INTO baton.jobs (queue, tenant_id, job_type, state, finished_at, dead_letter_reason, attempt)
    SELECT 'hot', 'default', 'x', s, now(), CASE WHEN s = 'dead_lettered' THEN 'attempts_exhausted' END, 1
    FROM (SELECT CASE WHEN g % 100 = 0 THEN 'dead_lettered' WHEN g % 100 = 1 THEN 'cancelled' ELSE 'succeeded' END AS s
          FROM generate_series(1, $1::int) g) h`,
    [HISTORY],
  );
  await db.query(`INSERT INTO baton.finished_counts (queue, state, shard, n)
    SELECT queue, state, 0, count(*) FROM baton.jobs WHERE finished_at IS NOT NULL GROUP BY queue, state`);
  // And new live work on top.
  await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type) SELECT 'hot', 'big', 'new' FROM generate_series(1, 20)`);
});

type Arg = string | number | boolean | null;
const lit = (v: Arg) => (v === null ? 'NULL' : typeof v === 'string' ? `'${v.replaceAll("'", "''")}'` : String(v));

const explain = (text: string, args: Arg[], mode: string): Promise<PlanNode> => explainPrepared(db.pool, text, args.map(lit), mode);

interface Read {
  text: string;
  args: Arg[];
  /** Rows the read answers with. */
  rows: number;
  /** Index scans it must use (a subset of its scans). */
  uses: string[];
  /** Rows it may visit, when more than BUDGET. */
  budget?: number;
  /**
   * Sent unnamed, so PostgreSQL plans it with its values every time (job-read.ts): no generic
   * plan of it ever runs, and the generic mode does not apply.
   */
  unnamed?: boolean;
  /**
   * Scans of jobs it may start (loops of every scan node, summed): for a walk that must start
   * where it is told, where skipped chunks or blocks would cost probes but no rows.
   */
  probes?: number;
}

const shape = (s: Partial<ListShape>): ListShape => ({ tenantId: false, queue: false, jobType: false, ...s });
const list = (s: Partial<ListShape>, args: string[], rows: number, uses: string[], limit = 50): Read => ({
  text: rq.list(shape(s)).text,
  unnamed: rq.list(shape(s)).name === undefined,
  args: [...args, limit, 0],
  rows,
  uses,
});
const count = (s: Partial<ListShape>, args: string[], uses: string[]): Read => ({
  text: rq.countCapped(shape(s)).text,
  unnamed: rq.countCapped(shape(s)).name === undefined,
  args: [...args, CAP],
  rows: 1,
  uses,
  // Up to CAP rows counted, each seen by a few nodes of the plan.
  budget: BUDGET + 4 * CAP,
});

// Sorted and time-filtered listings (job-list.ts). Its filters: state, tenant, queue, job type,
// created at or after, created before, then the id range those bounds resolve to.
const noFilters: Arg[] = [null, null, null, null, null, null];
const open: Arg[] = [...noFilters, ID_RANGE_OPEN.from, ID_RANGE_OPEN.before];
/** Ids of the fixture (a fresh database numbers from 1): the history is 17..100,016. */
const inHistory: Arg[] = [...noFilters, '50000', '60000'];
/** A page of the newest JOB_SORT_WINDOW matching jobs (by the default listing's parts) sorted by a key. */
const windowOf = (
  s: Partial<ListShape>,
  args: string[],
  key: JobSortKey,
  order: SortOrder,
  rows: number,
  due: boolean | null = null,
): Read => ({
  text: lq.windowOver(rq.list(shape(s)), args.length + 2, key, order).text,
  unnamed: true,
  args: [...args, JOB_SORT_WINDOW, 0, due, 50, 0],
  rows,
  uses: [],
  // The window's rows, each seen by a few nodes of the plan.
  budget: BUDGET + 4 * JOB_SORT_WINDOW,
});
/** A claim of `limit` jobs of `queue` by owner w-plan into running, answering `rows` rows. */
const claimRead = (q: { text: string }, queue: string, limit: number, rows: number, uses: string[]): Read => ({
  text: q.text,
  args: [queue, limit, 'w-plan', 'true', 60_000],
  rows,
  uses,
});
const SORTED: Record<string, Read> = {
  'list oldest first (id, createdAt)': { unnamed: true, text: lq.byId.asc.text, args: [...open, 50, 0], rows: 50, uses: ['jobs_pkey'] },
  'list created in a range, newest first': {
    unnamed: true,
    text: lq.byId.desc.text,
    args: [...inHistory, 50, 0],
    rows: 50,
    uses: ['jobs_pkey'],
  },
  'list created in a range, oldest first, deep page': {
    unnamed: true,
    text: lq.byId.asc.text,
    args: [...inHistory, 50, 1000],
    rows: 50,
    uses: ['jobs_pkey'],
  },
  'list created in a range sorted by attempt': {
    unnamed: true,
    text: lq.window['attempt:asc'].text,
    args: [...inHistory, null, 50, 0],
    rows: 50,
    uses: ['jobs_pkey'],
    budget: BUDGET + 4 * JOB_SORT_WINDOW,
  },
  'count created in a range': {
    unnamed: true,
    text: lq.countCapped.text,
    args: [...inHistory, CAP],
    rows: 1,
    uses: ['jobs_pkey'],
    budget: BUDGET + 4 * CAP,
  },
  'count created in a range, due': {
    unnamed: true,
    text: lq.countWindow.text,
    args: [...inHistory, true],
    rows: 1,
    uses: ['jobs_pkey'],
    budget: BUDGET + 4 * JOB_SORT_WINDOW,
  },
  'id of a creation time (bisection)': {
    text: lq.idFrom.text,
    args: [new Date(Date.now() - 60_000).toISOString()],
    rows: 1,
    uses: ['jobs_pkey'],
  },
  'id of a future creation time (bisection)': { text: lq.idFrom.text, args: ['2100-01-01T00:00:00Z'], rows: 1, uses: ['jobs_pkey'] },
  'list sorted by updatedAt': windowOf({}, [], 'updatedAt', 'desc', 50),
  'list sorted by runAt, ascending': windowOf({}, [], 'runAt', 'asc', 50),
  'list sorted by state': windowOf({}, [], 'state', 'asc', 50),
  'list dead-lettered sorted by queue': windowOf({ state: 'dead_lettered' }, [], 'queue', 'desc', 50),
  'list by tenant (rare) sorted by jobType': windowOf({ tenantId: true }, ['small'], 'jobType', 'asc', 10),
  'list pending, scheduled (due=false)': {
    text: lq.pendingDue.desc.text,
    unnamed: true,
    args: ['pending', ...open.slice(1), false, 50, 0],
    rows: 5,
    uses: ['jobs_claim_idx'],
  },
  'list pending, due, oldest first': {
    text: lq.pendingDue.asc.text,
    unnamed: true,
    args: ['pending', ...open.slice(1), true, 50, 0],
    rows: 20,
    uses: ['jobs_claim_idx'],
  },
  'list due (any state), newest first': windowOf({}, [], 'id', 'desc', 50, true),
  'list due, sorted by priority': windowOf({}, [], 'priority', 'desc', 50, true),
  'count pending, due': {
    text: lq.countPendingDue.text,
    unnamed: true,
    args: ['pending', ...open.slice(1), true, CAP],
    rows: 1,
    uses: ['jobs_claim_idx'],
  },
  'count due (any state)': {
    text: lq.countOver(rq.list(shape({})), 2).text,
    unnamed: true,
    args: [JOB_SORT_WINDOW, 0, true],
    rows: 1,
    uses: [],
    budget: BUDGET + 4 * JOB_SORT_WINDOW,
  },
};

const READS: Record<string, Read> = {
  ...SORTED,
  'counts of every queue': { text: rq.countsByQueue(false).text, args: [], rows: 7, uses: ['jobs_claim_idx', 'jobs_lease_expiry_idx'] },
  'counts of one queue': { text: rq.countsByQueue(true).text, args: ['rare'], rows: 2, uses: [] },
  'due jobs (health)': { text: hq.oldestDue.text, args: [], rows: 1, uses: ['jobs_claim_idx'] },
  'list, no filter': list({}, [], 50, ['jobs_claim_idx', 'jobs_lease_expiry_idx']),
  'list pending': list({ state: 'pending' }, [], 25, ['jobs_claim_idx']),
  'list running': list({ state: 'running' }, [], 1, ['jobs_lease_expiry_idx']),
  'list succeeded': list({ state: 'succeeded' }, [], 50, []),
  'list dead-lettered': list({ state: 'dead_lettered' }, [], 50, ['jobs_settled_rare_idx']),
  'list succeeded of a tenant': list({ state: 'succeeded', tenantId: true, otherTenant: true }, ['small'], 5, [
    'jobs_finished_other_tenant_idx',
  ]),
  'list dead-lettered of a rare queue': list({ state: 'dead_lettered', queue: true }, ['rare'], 5, []),
  'list by tenant (rare)': list({ tenantId: true, otherTenant: true }, ['small'], 10, ['jobs_finished_other_tenant_idx']),
  // The default tenant's history is not in the tenant index (migration 0021): a walk of the
  // primary key, newest first, stops once it has the page.
  'list by the default tenant': list({ tenantId: true }, ['default'], 50, ['jobs_pkey']),
  'list succeeded of the default tenant': list({ state: 'succeeded', tenantId: true }, ['default'], 50, ['jobs_pkey']),
  // A queue's finished jobs: its blocks (finished_blocks, migration 0024), then their ids.
  'list by queue (rare)': list({ queue: true }, ['rare'], 10, ['finished_blocks_queue_idx', 'jobs_pkey']),
  'list by queue (hot)': list({ queue: true }, ['hot'], 50, ['finished_blocks_queue_idx', 'jobs_pkey']),
  // Keyset pages deep in the history (a cursor in the middle of it): each part starts at the
  // cursor. Walking down to it from the newest id would be 50 chunks of the primary key, or 195
  // blocks of the queue, each a probe.
  'list, no filter, a deep cursor page': { ...list({ after: true }, ['50000'], 50, ['jobs_pkey']), probes: 20 },
  'list succeeded, a deep cursor page': { ...list({ state: 'succeeded', after: true }, ['50000'], 50, []), probes: 20 },
  'list by the default tenant, a deep cursor page': {
    ...list({ tenantId: true, after: true }, ['default', '50000'], 50, ['jobs_pkey']),
    probes: 20,
  },
  'list by queue (hot), a deep cursor page': {
    ...list({ queue: true, after: true }, ['hot', '50000'], 50, ['finished_blocks_queue_idx', 'jobs_pkey']),
    probes: 20,
  },
  'list by job type (none), a deep cursor page': {
    ...list({ jobType: true, after: true }, ['nope', '50000'], 0, ['jobs_claim_idx']),
    probes: 20,
  },
  'list pending of a tenant': list({ state: 'pending', tenantId: true }, ['big'], 25, ['jobs_claim_idx']),
  // Filters the index range does not cover, matching nothing in the history: the window bounds the search.
  'list by job type (none)': list({ jobType: true }, ['nope'], 0, ['jobs_claim_idx']),
  'list succeeded of a queue by job type (none)': {
    ...list({ state: 'succeeded', queue: true, jobType: true }, ['hot', 'nope'], 0, []),
    // The window's rows, from the queue's blocks: counted, read, then fetched by id.
    budget: BUDGET + 4 * LIST_WINDOW_ROWS,
  },
  'list cancelled by job type (none)': {
    ...list({ state: 'cancelled', jobType: true }, ['nope'], 0, ['jobs_settled_rare_idx']),
    // The window's rows, each seen by a few nodes of the plan.
    budget: BUDGET + 4 * LIST_WINDOW_ROWS,
  },
  'count by job type (none)': count({ jobType: true }, ['nope'], []),
  'count of the default tenant by job type (none)': count({ tenantId: true, jobType: true }, ['default', 'nope'], []),
  'count succeeded of a queue': count({ state: 'succeeded', queue: true }, ['hot'], []),
  // The console's poll (/api/stats): the window from the newest ids of the primary key (no index
  // of finish times, migration 0022), the counts by queue from the partial indexes and counters.
  'stats snapshot': {
    text: sq.snapshot.text,
    args: [60],
    rows: 1,
    uses: ['jobs_pkey'],
    // The newest STATS_SCAN_ROWS ids, every one of them finished within the window here (the
    // history was written just now), read once, then counted and sampled from the CTE: bounded,
    // whatever the history holds.
    budget: 5 * STATS_SCAN_ROWS,
  },
  'count, no filter': count({}, [], []),
  'count pending': count({ state: 'pending' }, [], ['jobs_claim_idx']),
  'count dead-lettered': count({ state: 'dead_lettered' }, [], []),
  'count by tenant (rare)': count({ tenantId: true, otherTenant: true }, ['small'], ['jobs_finished_other_tenant_idx']),
  'count by queue (rare)': count({ queue: true }, ['rare'], ['finished_blocks_queue_idx', 'jobs_pkey']),
  // The cap's rows from a few blocks, each row seen by the block's scan, its sort and the walk's array.
  'count by queue (hot)': { ...count({ queue: true }, ['hot'], ['finished_blocks_queue_idx', 'jobs_pkey']), budget: BUDGET + 8 * CAP },
  // /metrics and /api/flow: the live work per queue and tenant, and per concurrency key.
  'flow snapshot of tenants': { text: fq.snapshotTenants.text, args: [100], rows: 1, uses: ['jobs_claim_idx', 'jobs_lease_expiry_idx'] },
  'flow snapshot of active keys': { text: fq.snapshotActiveKeys.text, args: [100], rows: 0, uses: [] },
  // Nothing due in the rare queue: the claim finds that out without reading the history.
  claim: claimRead(jq.claim.open, 'rare', 200, 0, ['jobs_claim_idx']),
  // Small claims carry their limit in the text (claimLimit): the plan a connection keeps for them.
  'claim of 10 (its limit in the text)': claimRead(jq.claim(10), 'hot', 10, 10, ['jobs_claim_idx']),
  'claim of 1 (rare, its limit in the text)': claimRead(jq.claim(1), 'rare', 1, 0, ['jobs_claim_idx']),
  // The fair claim walks tenants through its own index, and takes the due jobs of the live queue.
  // Its answer ends with one more row (the 'one tenant' flag), counted here.
  'fair claim (rare)': {
    text: fq.claimFair.open.text,
    args: ['rare', 200, 'w-plan', 'true', 60_000, '', 0],
    rows: 1,
    uses: ['jobs_fair_idx'],
  },
  'fair claim (hot)': {
    text: fq.claimFair.open.text,
    args: ['hot', 200, 'w-plan', 'true', 60_000, '', 0],
    rows: 21,
    uses: ['jobs_fair_idx'],
  },
  'fair claim of 10 (hot, its limit in the text)': {
    text: fq.claimFair(10).text,
    args: ['hot', 10, 'w-plan', 'true', 60_000, '', 0],
    rows: 11,
    uses: ['jobs_fair_idx'],
  },
  // The one-tenant claim probes the tenants through the fair index too.
  'one-tenant claim (rare)': claimRead(fq.claimSolo.open, 'rare', 200, 1, ['jobs_fair_idx']),
  'one-tenant claim (hot)': claimRead(fq.claimSolo.open, 'hot', 200, 21, ['jobs_fair_idx']),
  'one-tenant claim of 10 (hot, its limit in the text)': claimRead(fq.claimSolo(10), 'hot', 10, 11, ['jobs_fair_idx']),
  // The claim of a queue never given another tenant's job: the FIFO pick through the claim index.
  // 'hot' holds tenant 'big''s jobs, so it is marked: the claim takes nothing.
  'plain claim (rare)': claimRead(fq.claimPlain.open, 'rare', 200, 0, ['jobs_claim_idx']),
  'plain claim (hot, marked)': claimRead(fq.claimPlain.open, 'hot', 200, 0, []),
  'plain claim of 10 (rare, its limit in the text)': claimRead(fq.claimPlain(10), 'rare', 10, 0, ['jobs_claim_idx']),
};

async function check(name: string, mode: string): Promise<void> {
  const r = READS[name]!;
  const plan = await explain(r.text, r.args, mode);
  const used = indexesUsed(plan);
  for (const index of r.uses) expect(used, name).toContain(index);
  expect(plan['Actual Rows'], name).toBe(r.rows);
  expect(rowsVisited(plan), name).toBeLessThan(r.budget ?? BUDGET);
  if (r.probes !== undefined)
    expect(
      jobScans(plan).reduce((n, s) => n + s['Actual Loops'], 0),
      name,
    ).toBeLessThan(r.probes);
}

const MODES = ['force_custom_plan', 'force_generic_plan'];

// Without statistics (autovacuum off and no ANALYZE yet) every read holds but a page of
// succeeded jobs (or a window of them, for a count): the planner guesses a state's share of the
// table, and for the bulk state it may walk the primary key or read every succeeded row through
// another index.
// A creation range's listing or count deeper than the planner's guess of a range's rows (0.5% of
// the table, without statistics) is read whole through a bitmap of the range and sorted: bounded
// by the range, not by the page, until the first ANALYZE.
const RANGE_DEEPER_THAN_GUESS = [
  'list created in a range, oldest first, deep page',
  'list created in a range sorted by attempt',
  'count created in a range',
  'count created in a range, due',
];
const WITHOUT_STATISTICS = Object.keys(READS).filter(
  (name) => !name.startsWith('list succeeded') && !name.startsWith('count succeeded') && !RANGE_DEEPER_THAN_GUESS.includes(name),
);
const inMode = (names: string[], mode: string) => names.filter((name) => mode !== 'force_generic_plan' || !READS[name]!.unnamed);

describe(`reads next to ${HISTORY.toLocaleString('en')} finished jobs, before any ANALYZE`, () => {
  for (const mode of MODES) it.each(inMode(WITHOUT_STATISTICS, mode))(`%s (${mode})`, (name) => check(name, mode));
});

describe(`reads next to ${HISTORY.toLocaleString('en')} finished jobs, analyzed`, () => {
  beforeAll(async () => {
    await db.query('ANALYZE baton.jobs');
  });
  for (const mode of MODES) it.each(inMode(Object.keys(READS), mode))(`%s (${mode})`, (name) => check(name, mode));
});
