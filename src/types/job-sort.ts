// The orders a job listing can be sorted in, and the checks of a listing's sort and time
// filters. The database layer maps each key to one column from a fixed table
// (db/pg/queries/job-list.ts); ties are broken by id.
//
// A listing reads at most what it returns. Ids grow with creation, so `createdAt` is the id
// order and both are served by the primary key. No index covers the other keys, so a listing
// sorted by one of them, or filtered by `due` (but for pending jobs), sorts the newest
// JOB_SORT_WINDOW matching jobs (by id) and says so (JobPage.windowed): never every matching
// row of a large history.

import { BatonError } from './errors.ts';

/** The keys a job listing may sort by (ListJobsFilter.sort). */
export const JOB_SORT_KEYS = [
  'id',
  'createdAt',
  'updatedAt',
  'runAt',
  'state',
  'jobType',
  'queue',
  'tenantId',
  'attempt',
  'priority',
] as const;
/** One of JOB_SORT_KEYS. */
export type JobSortKey = (typeof JOB_SORT_KEYS)[number];
/** The orders a listing may sort in. */
export const SORT_ORDERS = ['asc', 'desc'] as const;
/** One of SORT_ORDERS. */
export type SortOrder = (typeof SORT_ORDERS)[number];

/** The sort keys the primary key serves: createdAt is defined as the id order (ids grow with creation). */
export const INDEXED_SORT_KEYS = ['id', 'createdAt'] as const satisfies readonly JobSortKey[];

/**
 * How many of the newest matching jobs (by id) a windowed listing sorts: one sorted by a key
 * other than id or createdAt, or filtered by `due`. Pages past it are empty.
 */
export const JOB_SORT_WINDOW = 500;

/**
 * Whether a listing is served from the window (see JOB_SORT_WINDOW): a sort key other than id or
 * createdAt, or `due` beside any state but pending (the pending jobs, live work, are read whole
 * through their partial index, so the console's due and scheduled views are never windowed).
 */
export function isWindowedListing(f: { sort?: JobSortKey | undefined; due?: boolean | undefined; state?: string | undefined }): boolean {
  return !(INDEXED_SORT_KEYS as readonly string[]).includes(f.sort ?? 'id') || (f.due !== undefined && f.state !== 'pending');
}

/** The tenant a listing has no index of its own for (its finished jobs are walked by id). */
export const DEFAULT_TENANT = 'default';

/**
 * The finished jobs a listing newest first (without creation bounds) reads a window at a time,
 * when its filters leave one its index range does not cover (docs/http-api.md, Listing): none
 * (null, the read is exact); the queue's, another tenant's, a rare state's or all finished jobs.
 * The rule of db/pg/queries/job-read.ts, kept here so that the admin API knows which listings a
 * cursor can page: a window's search below a cursor would skip the matches between the window's
 * bottom and the live jobs that fill the page.
 */
export function finishedWindowOf(f: {
  state?: string | undefined;
  /** The tenant filter: none, the default tenant, or another one. */
  tenant?: 'default' | 'other' | undefined;
  queue: boolean;
  jobType: boolean;
}): 'queue' | 'tenant' | 'dead_lettered' | 'cancelled' | 'finished' | null {
  const { state } = f;
  if (state !== undefined && !['succeeded', 'dead_lettered', 'cancelled'].includes(state)) return null;
  const narrowed = state !== undefined || f.jobType;
  if (f.queue) return f.tenant !== undefined || narrowed ? 'queue' : null;
  if (f.tenant !== undefined) return f.tenant === 'other' && narrowed ? 'tenant' : null;
  if (state === 'dead_lettered' || state === 'cancelled') return f.jobType ? state : null;
  return narrowed ? 'finished' : null;
}

/**
 * Whether a listing pages by cursor (JobPage.nextCursor): in id order, not windowed, and exact,
 * that is not newest first through a window of finished jobs (finishedWindowOf).
 */
export function pagesByCursor(f: {
  state?: string | undefined;
  tenantId?: string | undefined;
  queue?: string | undefined;
  jobType?: string | undefined;
  sort?: JobSortKey | undefined;
  order?: SortOrder | undefined;
  due?: boolean | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}): boolean {
  if (isWindowedListing(f)) return false;
  const byParts = (f.order ?? 'desc') === 'desc' && f.due === undefined && f.createdAfter === undefined && f.createdBefore === undefined;
  if (!byParts) return true;
  const tenant = f.tenantId === undefined ? undefined : f.tenantId === DEFAULT_TENANT ? 'default' : 'other';
  return finishedWindowOf({ state: f.state, tenant, queue: f.queue !== undefined, jobType: f.jobType !== undefined }) === null;
}

/** INVALID_ARGUMENT naming the field, for a sort key, order or creation-time bound the listing cannot use. */
export function checkSortAndTimes(f: { sort?: unknown; order?: unknown; createdAfter?: unknown; createdBefore?: unknown }): void {
  if (f.sort !== undefined && !(JOB_SORT_KEYS as readonly unknown[]).includes(f.sort)) {
    throw new BatonError('INVALID_ARGUMENT', `sort must be one of ${JOB_SORT_KEYS.join(', ')}`, { details: { field: 'sort' } });
  }
  if (f.order !== undefined && !(SORT_ORDERS as readonly unknown[]).includes(f.order)) {
    throw new BatonError('INVALID_ARGUMENT', `order must be one of ${SORT_ORDERS.join(', ')}`, { details: { field: 'order' } });
  }
  for (const field of ['createdAfter', 'createdBefore'] as const) {
    const d = f[field];
    if (d !== undefined && !(d instanceof Date && Number.isFinite(d.getTime()))) {
      throw new BatonError('INVALID_ARGUMENT', `${field} must be a valid Date`, { details: { field } });
    }
  }
}
