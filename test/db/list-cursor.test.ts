// Keyset pages of admin.listJobs: following nextCursor from the first page to the last gives
// exactly the rows of one ordered scan of the table, for every statement an exact listing in id
// order can take (each part of the default listing, the default tenant's walk, a queue's
// blocks, the rare states' index, creation bounds, pending jobs by due), both ways; rows
// inserted while paging neither repeat nor shift a page; and a cursor is refused where it
// cannot apply: windowed listings, and newest first through a window of finished jobs.

import { beforeAll, describe, expect, it } from 'vitest';
import type { ListJobsFilter } from '../../src/core/admin.ts';
import { baton, expectBatonError, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

beforeAll(async () => {
  // 3,000 finished jobs over three queues (many blocks each), one in seven of another tenant,
  // one in ten dead-lettered, one in 37 cancelled, one in five of another job type; then live
  // work: pending (due and scheduled) and running jobs, some of them under the history's ids.
  await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type, state, finished_at, dead_letter_reason, attempt, created_at)
    SELECT 'q' || (g % 3), CASE WHEN g % 7 = 0 THEN 'acme' ELSE 'default' END, CASE WHEN g % 5 = 0 THEN 'y' ELSE 'x' END,
      CASE WHEN g % 10 = 0 THEN 'dead_lettered' WHEN g % 37 = 0 THEN 'cancelled' ELSE 'succeeded' END, now(),
      CASE WHEN g % 10 = 0 THEN 'terminal_error' END, 1, timestamptz '2030-01-01' + g * interval '1 minute'
    FROM generate_series(1, 3000) g`);
  await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type, run_at, created_at)
    SELECT 'q' || (g % 3), CASE WHEN g % 4 = 0 THEN 'acme' ELSE 'default' END, 'x',
      now() + CASE WHEN g % 3 = 0 THEN interval '1 day' ELSE interval '-1 minute' END, timestamptz '2030-03-01' + g * interval '1 minute'
    FROM generate_series(1, 120) g`);
  await db.query(`UPDATE baton.jobs SET state = 'running', attempt = 1, lease_token = 1, lease_owner = 'w',
      lease_expires_at = now() + interval '1 hour', started_at = now(), finished_at = NULL, dead_letter_reason = NULL
    WHERE id % 211 = 0`);
});

/** Every id the filter matches, in its order, read by one plain scan. */
async function truth(f: ListJobsFilter): Promise<string[]> {
  const r = await db.query<{ id: string }>(
    `SELECT j.id::text AS id FROM baton.jobs j
      WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR tenant_id = $2) AND ($3::text IS NULL OR queue = $3)
        AND ($4::text IS NULL OR job_type = $4) AND ($5::timestamptz IS NULL OR created_at >= $5)
        AND ($6::timestamptz IS NULL OR created_at < $6) AND ($7::boolean IS NULL OR (run_at <= now()) = $7)
      ORDER BY CASE WHEN $8 = 'asc' THEN j.id END ASC, j.id DESC`,
    [
      f.state ?? null,
      f.tenantId ?? null,
      f.queue ?? null,
      f.jobType ?? null,
      f.createdAfter ?? null,
      f.createdBefore ?? null,
      f.due ?? null,
      f.order ?? 'desc',
    ],
  );
  return r.rows.map((x) => x.id);
}

/** Every id of the listing, page by page through nextCursor; the number of pages read. */
async function follow(f: ListJobsFilter, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 1; pages < 1_000; pages++) {
    const page = await baton.admin.listJobs({ ...f, limit, ...(cursor ? { cursor } : {}) });
    ids.push(...page.jobs.map((j) => j.id));
    expect(page.jobs.length).toBeLessThanOrEqual(limit);
    if (page.nextCursor === null) {
      expect(page.jobs.length, 'only a short page is the last').toBeLessThan(limit);
      return { ids, pages };
    }
    expect(page.nextCursor).toBe(page.jobs.at(-1)?.id);
    cursor = page.nextCursor;
  }
  throw new Error('no last page');
}

const FILTERS: Array<[string, ListJobsFilter]> = [
  ['no filter', {}],
  ["dead-lettered (the rare states' index)", { state: 'dead_lettered' }],
  ['pending', { state: 'pending' }],
  ['running', { state: 'running' }],
  ['the default tenant (a walk of the primary key)', { tenantId: 'default' }],
  ['succeeded of the default tenant', { tenantId: 'default', state: 'succeeded' }],
  ['another tenant (its index)', { tenantId: 'acme' }],
  ['a queue (its blocks)', { queue: 'q1' }],
  ['oldest first', { order: 'asc' }],
  ['oldest first, of a queue', { order: 'asc', queue: 'q0', sort: 'createdAt' }],
  ['succeeded, job type y, oldest first', { order: 'asc', state: 'succeeded', jobType: 'y' }],
  ['created in a range', { createdAfter: new Date('2030-01-01T10:00:00Z'), createdBefore: new Date('2030-01-02T20:00:00Z') }],
  ['created in a range, oldest first', { createdAfter: new Date('2030-01-01T10:00:00Z'), order: 'asc', state: 'succeeded' }],
  ['pending and due', { state: 'pending', due: true }],
  ['pending and scheduled, oldest first', { state: 'pending', due: false, order: 'asc' }],
];

/**
 * Newest first, filters that leave the finished jobs searched a window at a time: a page below
 * a cursor could not tell the window's matches from the live jobs below the window's bottom.
 */
const WINDOWED: Array<[string, ListJobsFilter]> = [
  ['succeeded', { state: 'succeeded' }],
  ['cancelled, job type y', { state: 'cancelled', jobType: 'y' }],
  ['another tenant, job type y', { tenantId: 'acme', jobType: 'y' }],
  ['dead-lettered of a queue', { queue: 'q2', state: 'dead_lettered' }],
  ['job type y', { jobType: 'y' }],
];

describe('keyset pages', () => {
  it.each(FILTERS)('%s: the pages, end to end, are one scan', async (_, f) => {
    const want = await truth(f);
    expect(want.length).toBeGreaterThan(0);
    const got = await follow(f, 37);
    expect(got.ids).toEqual(want);
    expect(got.pages).toBe(Math.floor(want.length / 37) + 1);
  });

  it.each(WINDOWED)('%s: pages by offset only (no nextCursor, a cursor refused)', async (_, f) => {
    const page = await baton.admin.listJobs({ ...f, limit: 2 });
    expect(page.jobs).toHaveLength(2);
    expect(page.nextCursor).toBeNull();
    await expectBatonError(baton.admin.listJobs({ ...f, cursor: page.jobs[1]!.id }), 'INVALID_ARGUMENT');
  });

  it('a page after rows were inserted is the same page: new jobs neither repeat nor shift it', async () => {
    const first = await baton.admin.listJobs({ queue: 'q1', limit: 20 });
    const second = await baton.admin.listJobs({ queue: 'q1', limit: 20, cursor: first.nextCursor! });
    await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q1', 'x' FROM generate_series(1, 30)`);
    const again = await baton.admin.listJobs({ queue: 'q1', limit: 20, cursor: first.nextCursor! });
    expect(again.jobs.map((j) => j.id)).toEqual(second.jobs.map((j) => j.id));
    // The new jobs are there: on the first page.
    expect(BigInt((await baton.admin.listJobs({ queue: 'q1', limit: 1 })).jobs[0]!.id)).toBeGreaterThan(BigInt(first.jobs[0]!.id));
  });

  it('a cursor past every row answers an empty last page', async () => {
    const page = await baton.admin.listJobs({ cursor: '1' });
    expect([page.jobs, page.nextCursor]).toEqual([[], null]);
    const up = await baton.admin.listJobs({ order: 'asc', cursor: '9223372036854775807' });
    expect([up.jobs, up.nextCursor]).toEqual([[], null]);
  });

  it('refuses a cursor that is no id, beside an offset, or on a windowed listing', async () => {
    for (const cursor of ['0', '-5', 'abc', '99999999999999999999']) {
      expect((await expectBatonError(baton.admin.listJobs({ cursor }), 'INVALID_ARGUMENT')).details).toEqual({ field: 'cursor' });
    }
    await expectBatonError(baton.admin.listJobs({ cursor: '10', offset: 5 }), 'INVALID_ARGUMENT');
    await expectBatonError(baton.admin.listJobs({ cursor: '10', sort: 'priority' }), 'INVALID_ARGUMENT');
    await expectBatonError(baton.admin.listJobs({ cursor: '10', due: true }), 'INVALID_ARGUMENT');
    // A windowed page has no cursor to give.
    expect((await baton.admin.listJobs({ sort: 'priority', limit: 5 })).nextCursor).toBeNull();
  });
});
