// Baton's public library API: re-exports only.

export { createBaton, type BatonOptions } from './create-baton.ts';
export type {
  Baton,
  AdminApi,
  EnqueueOptions,
  EngineEvents,
  EngineStats,
  JobPage,
  ListJobsFilter,
  StateCounts,
  WorkerInfo,
} from './core/baton.ts';
export type { Handler, HandlerMap, JobContext } from './core/handler.ts';
export type { Logger } from './core/logger.ts';
export {
  JOB_STATES,
  TERMINAL_STATES,
  isTerminalState,
  LIST_INLINE_MAX_BYTES,
  type AttemptError,
  type EnqueueResult,
  type Job,
  type JobSpec,
  type JobState,
  type JobSummary,
  type LeasedJob,
  type PendingJob,
  type SucceededJob,
  type DeadLetteredJob,
  type CancelledJob,
} from './core/job.ts';
export { BatonError, TerminalError, LeaseLostError, ERROR_CODES, isBatonError, type ErrorCode } from './core/errors.ts';
export { engineConfigSchema, parseEngineConfig, NAME_PATTERN, nameSchema, type EngineConfig, type EngineConfigInput } from './core/config.ts';
export { RUN_AT_MIN, RUN_AT_MAX, runAtSchema } from './core/job-spec.ts';
export { migrate, type MigrateOptions, type MigrateResult } from './db/migrate.ts';
export { isInvalidInputSqlstate } from './db/pg/errors.ts';
