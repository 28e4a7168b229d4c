// The orders a job listing can be sorted in. The database layer maps each key to one
// column from a fixed table (db/pg/queries/job-list.ts); ties are broken by id.

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
export type JobSortKey = (typeof JOB_SORT_KEYS)[number];
export const SORT_ORDERS = ['asc', 'desc'] as const;
export type SortOrder = (typeof SORT_ORDERS)[number];
