// What the executor's modules share: the pool and one schema's named statements, built once per
// executor. Each module takes only the pieces it runs (a Pick of this), never the executor.

import type { PgPoolLike } from './pool.ts';
import { type DependencyQueries, dependencyQueries } from './queries/dependency.ts';
import { type FlowQueries, flowQueries } from './queries/flow-control.ts';
import { type HealthQueries, healthQueries } from './queries/health.ts';
import { type JobQueries, jobQueries } from './queries/job.ts';
import { type JobListQueries, jobListQueries } from './queries/job-list.ts';
import { type JobReadQueries, jobReadQueries } from './queries/job-read.ts';
import { type JobWindowQueries, jobWindowQueries } from './queries/job-window.ts';
import { type QueueQueries, queueQueries } from './queries/queue.ts';
import { type StatsQueries, statsQueries } from './queries/stats.ts';
import { type WorkerQueries, workerQueries } from './queries/worker.ts';

export interface ExecutorStatements {
  readonly pool: PgPoolLike;
  /** The schema as the catalogs spell it (unquoted). */
  readonly schemaName: string;
  readonly job: JobQueries;
  readonly read: JobReadQueries;
  readonly worker: WorkerQueries;
  readonly health: HealthQueries;
  readonly jobList: JobListQueries;
  readonly queue: QueueQueries;
  readonly stats: StatsQueries;
  readonly flow: FlowQueries;
  readonly dependency: DependencyQueries;
  readonly window: JobWindowQueries;
}

/** `quotedSchema` must already be quoted (see quoteSchema). */
export function executorStatements(pool: PgPoolLike, quotedSchema: string): ExecutorStatements {
  return {
    pool,
    schemaName: quotedSchema.replace(/^"(.*)"$/, '$1').replaceAll('""', '"'),
    job: jobQueries(quotedSchema),
    read: jobReadQueries(quotedSchema),
    worker: workerQueries(quotedSchema),
    health: healthQueries(quotedSchema),
    jobList: jobListQueries(quotedSchema),
    queue: queueQueries(quotedSchema),
    stats: statsQueries(quotedSchema),
    flow: flowQueries(quotedSchema),
    dependency: dependencyQueries(quotedSchema),
    window: jobWindowQueries(quotedSchema),
  };
}
