// The schedule as the library and the HTTP API show it, and what a caller submits to
// create or update one. A schedule's status is a union: enabled, paused by an operator,
// or disabled by the scheduler with a reason.

/** What a schedule does with occurrences missed while nothing ticked (docs/cron.md, Misfires). */
export const MISFIRE_POLICIES = ['skip', 'fire_once', 'fire_all'] as const;
/** What happens to occurrences that elapsed while nothing was ticking (see docs/cron.md). */
export type MisfirePolicy = (typeof MISFIRE_POLICIES)[number];
export const MISFIRE_POLICY_DEFAULT: MisfirePolicy = 'fire_once';
export const CATCH_UP_LIMIT_DEFAULT = 100;
export const CATCH_UP_LIMIT_MAX = 10_000;

/** A schedule's status: enabled, paused by an operator, or disabled by the scheduler with a reason. */
export type ScheduleStatus = 'enabled' | 'paused' | 'disabled';

/**
 * A recurring job or workflow run as stored: its expression, zone, target, misfire policy, status
 * and next fire time. `workflow` null: each occurrence enqueues a job (jobType, queue, payload,
 * priority, maxAttempts). `workflow` set: each occurrence starts a run of it with `payload` as its
 * input (jobType then reads `workflow:<name>`, queue the workflow's queue when the schedule was written).
 */
export interface Schedule {
  id: string;
  tenantId: string;
  name: string;
  cron: string;
  /** IANA zone id. */
  timezone: string;
  jobType: string;
  /** The workflow each occurrence starts a run of; null for a job schedule. */
  workflow: string | null;
  queue: string;
  /** The job's payload, or the run's input for a workflow schedule. */
  payload: unknown;
  priority: number;
  /** Null: the engine's maxAttemptsDefault at enqueue time. */
  maxAttempts: number | null;
  misfirePolicy: MisfirePolicy;
  catchUpLimit: number;
  status: ScheduleStatus;
  /** Why the scheduler disabled it (status 'disabled'); null otherwise. */
  disabledReason: string | null;
  /** The next occurrence's instant; null while paused or disabled. */
  nextFireAt: Date | null;
  /** The instant of the last occurrence enqueued. */
  lastFiredAt: Date | null;
  /** Bumped by every edit; the ticker's writes are conditional on it. */
  version: string;
  createdAt: Date;
  updatedAt: Date;
}

/** When a schedule fires, and what it does with missed occurrences. */
export interface ScheduleTiming {
  name: string;
  cron: string;
  timezone: string;
  /** Default 'default'. */
  tenantId?: string;
  /** Default fire_once. */
  misfirePolicy?: MisfirePolicy;
  /** Most missed occurrences fire_all enqueues in one catch-up (the latest ones). Default 100. */
  catchUpLimit?: number;
}

/** A schedule whose occurrences enqueue a job. */
export interface ScheduleJobTarget {
  /** Not `workflow:<name>`: a workflow is scheduled with `workflow` (ScheduleWorkflowTarget). */
  jobType: string;
  /** Default 'default'. */
  queue?: string;
  payload?: unknown;
  priority?: number;
  maxAttempts?: number;
  workflow?: never;
  input?: never;
}

/** A schedule whose occurrences each start one run of a workflow the registry knows. */
export interface ScheduleWorkflowTarget {
  workflow: string;
  /** The input of every run; default null. */
  input?: unknown;
  jobType?: never;
  queue?: never;
  payload?: never;
  priority?: never;
  maxAttempts?: never;
}

/** A schedule to create or update, by tenant and name: its timing and its target, a job or a workflow run. */
export type ScheduleInput = ScheduleTiming & (ScheduleJobTarget | ScheduleWorkflowTarget);

/**
 * The editable fields of a schedule (PATCH): any subset, plus pausing and resuming. Giving
 * `jobType` makes it a job schedule, `workflow` a workflow schedule; neither keeps its target.
 */
export type SchedulePatch = Partial<Omit<ScheduleTiming, 'name' | 'tenantId'>> & {
  jobType?: string;
  queue?: string;
  payload?: unknown;
  priority?: number;
  maxAttempts?: number;
  workflow?: string;
  input?: unknown;
  paused?: boolean;
};

/** The deterministic idempotency key of one occurrence: two tickers computing it make one job. */
export function occurrenceKey(scheduleId: string, instant: Date): string {
  return `cron:${scheduleId}:${instant.toISOString()}`;
}
