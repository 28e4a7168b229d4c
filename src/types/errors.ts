// Error classes with stable codes. The HTTP edge maps codes to statuses in one
// table; nothing in core knows about HTTP.

/** Every stable code a BatonError carries (docs/library.md, Errors). */
export const ERROR_CODES = [
  'INVALID_ARGUMENT',
  'INVALID_CONFIG',
  'INVALID_CRON_EXPRESSION',
  'INVALID_TIMEZONE',
  'JOB_NOT_FOUND',
  'QUEUE_NOT_FOUND',
  'JOB_STATE_CONFLICT',
  'SCHEDULE_NOT_FOUND',
  'SCHEDULE_CONFLICT',
  'SHUTTING_DOWN',
  'DB_UNAVAILABLE',
  'LEASE_LOST',
  'WORKFLOW_NOT_FOUND',
  'RUN_NOT_FOUND',
  'RUN_STATE_CONFLICT',
  'KEY_PATTERN_NOT_FOUND',
  'INTERNAL',
  'OUTBOX_MESSAGE_NOT_FOUND',
  'OUTBOX_STATE_CONFLICT',
  'API_KEY_NOT_FOUND',
] as const;
/** One of ERROR_CODES: what `BatonError.code` holds. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Every error Baton throws on purpose. `code` is stable; `details` is JSON-safe. */
export class BatonError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  constructor(code: ErrorCode, message: string, options: { details?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BatonError';
    this.code = code;
    this.details = options.details;
  }
}

/** True for a BatonError, whose `code` then says which error it is (docs/library.md, Errors). */
export function isBatonError(err: unknown): err is BatonError {
  return err instanceof BatonError;
}

/** Thrown by a handler (or found in its cause chain) to dead-letter the job at once, without retries. */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

/** Thrown by ctx.checkLease() once the worker no longer holds the job's lease. */
export class LeaseLostError extends BatonError {
  constructor(jobId: string, token: string) {
    super('LEASE_LOST', `lease on job ${jobId} (token ${token}) was lost`, { details: { jobId, token } });
    this.name = 'LeaseLostError';
  }
}

/**
 * The reason a handler's `ctx.signal` is aborted with when its job has a cancel request
 * (admin.cancel on a running job). The lease is still held: a handler that stops on it (throws
 * or rejects) ends its job `cancelled`; one that returns anyway ends it with its real outcome.
 */
export class JobCancelledError extends Error {
  readonly jobId: string;
  constructor(jobId: string) {
    super(`job ${jobId} was asked to stop (cancel requested)`);
    this.name = 'JobCancelledError';
    this.jobId = jobId;
  }
}

/** A workflow run's replay reached a different step than its history holds: the code changed under it. Terminal. */
export class NonDeterminismError extends TerminalError {
  constructor(message: string) {
    super(message);
    this.name = 'NonDeterminismError';
  }
}

/**
 * Thrown by a handler that has already written its job's outcome itself, under its lease
 * (a workflow execution that suspended): the runner writes nothing and frees the slot.
 */
export class OutcomeWritten extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutcomeWritten';
  }
}
