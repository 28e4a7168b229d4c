// Listings beyond the default (queries/job.ts `list`, newest first): sorted by another
// column and/or filtered by creation time or by whether the run-at has come. One named statement per sort key and direction,
// built from a fixed table of columns, so no text from a request ever reaches the SQL.
// Sorting by a column other than id reads every matching row and sorts it (no index covers
// them all): fine for an operator's console, and why the default listing stays on `list`.

import { JOB_SORT_KEYS, type JobSortKey, type SortOrder } from '../../../core/job-sort.ts';
import { summaryColumns } from './job.ts';

const COLUMN: Record<JobSortKey, string> = {
  id: 'j.id',
  createdAt: 'j.created_at',
  updatedAt: 'j.updated_at',
  runAt: 'j.run_at',
  state: 'j.state',
  jobType: 'j.job_type',
  queue: 'j.queue',
  tenantId: 'j.tenant_id',
  attempt: 'j.attempt',
  priority: 'j.priority',
};

/**
 * $1 state, $2 tenant, $3 queue, $4 job type, $5 created at or after, $6 created before,
 * $7 due (run_at has come by the database's clock: true, lies ahead: false); the listing adds
 * $8 limit, $9 offset, the count $8 its cap.
 */
const where = `($1::text IS NULL OR j.state = $1) AND ($2::text IS NULL OR j.tenant_id = $2)
  AND ($3::text IS NULL OR j.queue = $3) AND ($4::text IS NULL OR j.job_type = $4)
  AND ($5::timestamptz IS NULL OR j.created_at >= $5) AND ($6::timestamptz IS NULL OR j.created_at < $6)
  AND ($7::boolean IS NULL OR (j.run_at <= now()) = $7)`;

export function jobListQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  const list = {} as Record<`${JobSortKey}:${SortOrder}`, { name: string; text: string }>;
  for (const key of JOB_SORT_KEYS) {
    for (const order of ['asc', 'desc'] as const) {
      const tie = key === 'id' ? '' : `, j.id ${order}`;
      list[`${key}:${order}`] = {
        name: `${schema}.job_list_by_${key}_${order}`,
        text: `SELECT ${summaryColumns('j')} FROM ${jobs} j WHERE ${where}
          ORDER BY ${COLUMN[key]} ${order}${tie} LIMIT $8 OFFSET $9`,
      };
    }
  }
  return {
    list,
    countCapped: {
      name: `${schema}.job_count_capped_by_time`,
      text: `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${jobs} j WHERE ${where} LIMIT $8) c`,
    },
  } as const;
}

export type JobListQueries = ReturnType<typeof jobListQueries>;
