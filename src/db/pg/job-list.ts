// Listings and capped counts of jobs: each filter and sort goes to the statement whose index
// serves it, so a page costs what the page costs wherever the jobs are (queries/job-list.ts).

import type { JobListParams } from '../../driver/executor.ts';
import { isWindowedListing, JOB_SORT_WINDOW, pagesByCursor } from '../../types/job-sort.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import { ID_RANGE_OPEN } from './queries/job-list.ts';
import { shapeValues } from './queries/job-read.ts';
import { queryRows } from './query-rows.ts';
import { type JobSummaryRow, rowToSummary } from './rows.ts';

type ListDb = Pick<ExecutorStatements, 'pool' | 'read' | 'jobList'>;

export async function list(db: ListDb, p: JobListParams) {
  // Newest first with no time filter: the partial indexes part by part (queries/job-read.ts), costing
  // what the page costs. In id order otherwise (createdAt is the id order): the primary key
  // within the creation bounds' id range, or the pending jobs by `due` through the claim index.
  // Another sort, or `due` of other states: the newest JOB_SORT_WINDOW matching jobs, sorted
  // (queries/job-list.ts).
  const key = p.sort ?? 'id';
  const order = p.order ?? 'desc';
  // A cursor (`after`, id order only) narrows each read to the ids past it, through the same index.
  const shape = { ...shapeValues(p).shape, state: p.state };
  const values = shapeValues(p).values;
  let rows: JobSummaryRow[];
  if (p.after !== undefined && !pagesByCursor(p)) throw new Error('a cursor pages an exact listing in id order only (pagesByCursor)');
  if (!isWindowedListing(p) && p.due !== undefined) {
    const range = pastCursor(await rangeValues(db, p), p.after, order);
    rows = await queryRows<JobSummaryRow>(db.pool, db.jobList.pendingDue[order], [...range, p.due, p.limit, p.offset]);
  } else if (!isWindowedListing(p) && order === 'desc' && !hasCreationBounds(p)) {
    const after = p.after === undefined ? [] : [p.after];
    rows = await queryRows<JobSummaryRow>(db.pool, db.read.list({ ...shape, after: p.after !== undefined }), [
      ...values,
      ...after,
      p.limit,
      p.offset,
    ]);
  } else if (!isWindowedListing(p)) {
    const range = pastCursor(await rangeValues(db, p), p.after, order);
    rows = await queryRows<JobSummaryRow>(db.pool, db.jobList.byId[order], [...range, p.limit, p.offset]);
  } else if (!hasCreationBounds(p)) {
    const over = db.jobList.windowOver(db.read.list(shape), values.length + 2, key, order);
    rows = await queryRows<JobSummaryRow>(db.pool, over, [...values, JOB_SORT_WINDOW, 0, p.due ?? null, p.limit, p.offset]);
  } else {
    rows = await queryRows<JobSummaryRow>(db.pool, db.jobList.window[`${key}:${order}`], [
      ...(await rangeValues(db, p)),
      p.due ?? null,
      p.limit,
      p.offset,
    ]);
  }
  return rows.map(rowToSummary);
}

export async function countCapped(db: ListDb, p: Omit<JobListParams, 'offset' | 'limit' | 'after'> & { cap: number }) {
  // `due` counts within the window its listing sorts (the pending jobs whole); creation bounds
  // count their id range.
  const shape = { ...shapeValues(p).shape, state: p.state };
  const values = shapeValues(p).values;
  let rows: Array<{ n: number }>;
  if (p.due !== undefined && !isWindowedListing(p)) {
    rows = await queryRows<{ n: number }>(db.pool, db.jobList.countPendingDue, [...(await rangeValues(db, p)), p.due, p.cap]);
  } else if (p.due !== undefined && !hasCreationBounds(p)) {
    const over = db.jobList.countOver(db.read.list(shape), values.length + 2);
    rows = await queryRows<{ n: number }>(db.pool, over, [...values, JOB_SORT_WINDOW, 0, p.due]);
  } else if (p.due !== undefined) {
    rows = await queryRows<{ n: number }>(db.pool, db.jobList.countWindow, [...(await rangeValues(db, p)), p.due]);
  } else if (hasCreationBounds(p)) {
    rows = await queryRows<{ n: number }>(db.pool, db.jobList.countCapped, [...(await rangeValues(db, p)), p.cap]);
  } else {
    rows = await queryRows<{ n: number }>(db.pool, db.read.countCapped(shape), [...values, p.cap]);
  }
  return Math.min(rows[0]?.n ?? 0, p.cap);
}

/** The filters of queries/job-list.ts's `where`: state, tenant, queue, type, creation bounds and their id range. */
async function rangeValues(db: ListDb, p: Omit<JobListParams, 'offset' | 'limit'>): Promise<unknown[]> {
  const idFrom = async (at: Date | undefined, open: string) =>
    at === undefined ? open : ((await queryRows<{ id: string }>(db.pool, db.jobList.idFrom, [at]))[0]?.id ?? open);
  const [from, before] = await Promise.all([idFrom(p.createdAfter, ID_RANGE_OPEN.from), idFrom(p.createdBefore, ID_RANGE_OPEN.before)]);
  return [...filterValues(p), p.createdAfter ?? null, p.createdBefore ?? null, from, before];
}

/**
 * rangeValues narrowed to the ids past a cursor in the listing's order: below it newest first,
 * above it oldest first. Its last two values are the id range [from, before).
 */
function pastCursor(range: unknown[], after: string | undefined, order: 'asc' | 'desc'): unknown[] {
  if (after === undefined) return range;
  const [from, before] = [BigInt(range.at(-2) as string), BigInt(range.at(-1) as string)];
  const cursor = BigInt(after);
  const max = (a: bigint, b: bigint) => (a > b ? a : b);
  const min = (a: bigint, b: bigint) => (a < b ? a : b);
  // Past the last id the range is empty ([before, before)), never a value int8 cannot hold.
  const bounds = order === 'desc' ? [from, min(cursor, before)] : [min(max(cursor + 1n, from), before), before];
  return [...range.slice(0, -2), ...bounds.map(String)];
}

function hasCreationBounds(p: Pick<JobListParams, 'createdAfter' | 'createdBefore'>): boolean {
  return p.createdAfter !== undefined || p.createdBefore !== undefined;
}

function filterValues(p: Pick<JobListParams, 'state' | 'tenantId' | 'queue' | 'jobType'>): unknown[] {
  return [p.state ?? null, p.tenantId ?? null, p.queue ?? null, p.jobType ?? null];
}
