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

/** A recurring job as stored: its expression, zone, job template, misfire policy, status and next fire time. */
export interface Schedule {
  id: string;
  tenantId: string;
  name: string;
  cron: string;
  /** IANA zone id. */
  timezone: string;
  jobType: string;
  queue: string;
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

/** A schedule to create or update, by tenant and name. */
export interface ScheduleInput {
  name: string;
  cron: string;
  timezone: string;
  jobType: string;
  /** Default 'default'. */
  tenantId?: string;
  /** Default 'default'. */
  queue?: string;
  payload?: unknown;
  priority?: number;
  maxAttempts?: number;
  /** Default fire_once. */
  misfirePolicy?: MisfirePolicy;
  /** Most missed occurrences fire_all enqueues in one catch-up (the latest ones). Default 100. */
  catchUpLimit?: number;
}

/** The editable fields of a schedule (PATCH): any subset, plus pausing and resuming. */
export type SchedulePatch = Partial<Omit<ScheduleInput, 'name' | 'tenantId'>> & { paused?: boolean };

/** The deterministic idempotency key of one occurrence: two tickers computing it make one job. */
export function occurrenceKey(scheduleId: string, instant: Date): string {
  return `cron:${scheduleId}:${instant.toISOString()}`;
}
