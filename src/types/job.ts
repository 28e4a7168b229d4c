// The job model: states (a contract, lowercase everywhere) and a discriminated
// union so a field only one state has is never optional on all of them.

import type { TraceCarrier } from './trace.ts';

/** Every state a job can be in (docs/library.md, Job states). */
export const JOB_STATES = ['pending', 'waiting', 'leased', 'running', 'succeeded', 'dead_lettered', 'cancelled'] as const;
/** One of JOB_STATES: lowercase everywhere (SQL, API, console). */
export type JobState = (typeof JOB_STATES)[number];

/** The states a job finishes in; admin.replay takes a job out of them again. */
export const TERMINAL_STATES = ['succeeded', 'dead_lettered', 'cancelled'] as const satisfies readonly JobState[];
/** One of TERMINAL_STATES. */
export type TerminalState = (typeof TERMINAL_STATES)[number];

export function isTerminalState(state: JobState): state is TerminalState {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

const INT8_MAX = 9223372036854775807n;

/** The text of an id (a job's, a run's, a message's): a positive decimal integer of at most 19 digits. */
export const ID_PATTERN = /^[1-9][0-9]{0,18}$/;

/** True when `id` can name a job at all: a positive int8 written in decimal. */
export function isJobId(id: string): boolean {
  return ID_PATTERN.test(id) && BigInt(id) <= INT8_MAX;
}

/** A cluster's name in a sharded deployment (createShardedBaton): lowercase, a letter first. */
export const CLUSTER_NAME_PATTERN = /^[a-z][a-z0-9_]{0,15}$/;

/** A job id with its cluster in front (`a:123`), as a sharded Baton spells every id it answers. */
export const CLUSTER_JOB_ID_PATTERN = /^([a-z][a-z0-9_]{0,15}):([1-9][0-9]{0,18})$/;

/**
 * True when `id` can name a job on some Baton: a job id (isJobId), or a cluster's name and a job
 * id (`a:123`, what a sharded Baton answers). Which of the two a given Baton serves is its own
 * to say: a single database answers JOB_NOT_FOUND for a prefixed id, a sharded one for a bare id.
 */
export function isJobRef(id: string): boolean {
  if (isJobId(id)) return true;
  const m = CLUSTER_JOB_ID_PATTERN.exec(id);
  return m !== null && isJobId(m[2] as string);
}

/**
 * Why an attempt failed: 'terminal' (TerminalError), 'transient' (anything else thrown),
 * 'lease_expired' and 'worker_gone' (the reaper: the lease ran out, or its worker's session
 * ended), 'unknown_job_type' (no handler), 'parent_failed' (a job it depends on dead-lettered or
 * was cancelled, so it was cancelled without running; the message names the parent), 'cancelled'
 * (the attempt failed after its job's cancel request, which ended the job cancelled; the message
 * is the handler's).
 */
export const ATTEMPT_ERROR_KINDS = [
  'terminal',
  'transient',
  'lease_expired',
  'worker_gone',
  'unknown_job_type',
  'parent_failed',
  'cancelled',
] as const;
/** One of ATTEMPT_ERROR_KINDS: how a failed attempt ended. */
export type AttemptErrorKind = (typeof ATTEMPT_ERROR_KINDS)[number];

/** One failed attempt, kept in the job's error history so an operator can read the chain. */
export interface AttemptError {
  attempt: number;
  /** Token of the lease the attempt ran under. */
  token: string;
  kind: AttemptErrorKind;
  name: string;
  message: string;
  stack?: string;
  /** ISO time from the database clock. */
  at: string;
}

/**
 * How far a running job has got, as its handler last reported it (ctx.progress): a number from
 * 0 to 100 (a percentage), or a JSON object of at most PROGRESS_MAX_BYTES as JSON text.
 */
export type JobProgress = number | { [key: string]: unknown };
/** Largest progress object, in bytes of its JSON text (so a listing always carries it inline). */
export const PROGRESS_MAX_BYTES = 2_048;

interface JobBase {
  /** bigint identity, as a decimal string (JSON-safe). */
  id: string;
  tenantId: string;
  queue: string;
  jobType: string;
  payload: unknown;
  priority: number;
  runAt: Date;
  attempt: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  replayCount: number;
  errors: AttemptError[];
  lastError: AttemptError | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  /** The W3C trace context it was enqueued in, which each attempt's span continues; null if none. */
  trace: TraceCarrier | null;
  /** The jobs it was enqueued to wait for (dependsOn), when any; read from the job (a claim leaves it out). */
  dependsOn?: string[];
  /**
   * When a cancel was requested while the job was leased or running (admin.cancel), else null.
   * Such a job is never retried or claimed again; its state says how it ended: `cancelled`
   * (its handler stopped, failing, or nothing held it any more) or its real outcome
   * (`succeeded`: the handler finished anyway). Null on a job cancelled while it waited.
   */
  cancelRequestedAt: Date | null;
  /**
   * The latest progress a handler of the job stored (ctx.progress), kept across attempts; null
   * when none did. Absent from the job a handler is given (ctx.job: the claim leaves it out).
   */
  progress?: JobProgress | null;
  /**
   * The debounce or throttle rule its key holds the job under (JobSpec.debounce / throttle): read
   * by getJob and answered by a windowed enqueue; absent when none (a plain job, or a job its key
   * has since moved on from: a later job of the key holds it), and from listings and claims.
   */
  enqueueWindow?: EnqueueWindow;
}

/** A job waiting for its run-at and a worker. */
export interface PendingJob extends JobBase {
  state: 'pending';
  /** Token of the last lease, or null if never claimed. */
  lastToken: string | null;
}
/** Enqueued with dependsOn: runs (becomes pending) once every parent has succeeded. */
export interface WaitingJob extends JobBase {
  state: 'waiting';
  /** How many of its parents have not finished yet. */
  waitingFor: number;
}
/** A job a worker holds under a lease (state leased or running), with its fencing token: what a handler is given. */
export interface LeasedJob extends JobBase {
  state: 'leased' | 'running';
  token: string;
  leaseOwner: string;
  leaseExpiresAt: Date;
}
/** A job whose handler returned, with its result. */
export interface SucceededJob extends JobBase {
  state: 'succeeded';
  token: string;
  result: unknown;
  finishedAt: Date;
}
/** A job that failed for good: its attempts spent, or a TerminalError thrown. */
export interface DeadLetteredJob extends JobBase {
  state: 'dead_lettered';
  lastToken: string | null;
  reason: string;
  finishedAt: Date;
}
/** A job cancelled before or while it ran, or because a parent it depends on failed. */
export interface CancelledJob extends JobBase {
  state: 'cancelled';
  lastToken: string | null;
  finishedAt: Date;
}

/** A job as stored, one variant per state (narrow on `state`). */
export type Job = PendingJob | WaitingJob | LeasedJob | SucceededJob | DeadLetteredJob | CancelledJob;

/** Largest payload or result (stored bytes) a listing carries inline; a larger one is left out. */
export const LIST_INLINE_MAX_BYTES = 2_048;
/** Longest last-error message a listing carries (characters). */
export const LIST_MESSAGE_MAX_CHARS = 1_000;

type SummaryOf<J> = J extends unknown
  ? Omit<J, 'payload' | 'errors' | 'lastError' | 'result'> & {
      /** The payload when its stored size is at most LIST_INLINE_MAX_BYTES; absent otherwise (read the job). */
      payload?: unknown;
      /** Stored size of the payload in bytes (compressed when large). */
      payloadBytes: number;
      /** How many failed attempts the job's history holds. */
      errorCount: number;
      /** The last failed attempt, without its stack, its message cut to LIST_MESSAGE_MAX_CHARS. */
      lastError: Omit<AttemptError, 'stack'> | null;
    } & (J extends SucceededJob ? { result?: unknown; resultBytes: number } : unknown)
  : never;

/**
 * A job as listings show it: bounded whatever the job holds, so a page of them costs what its
 * row count says. The full job (payload, result, every attempt) is one getJob away.
 */
export type JobSummary = SummaryOf<Job>;

/** How a debounce treats the enqueues of its key (docs/debounce.md). */
export const DEBOUNCE_MODES = ['trailing', 'leading'] as const;
/** One of DEBOUNCE_MODES. */
export type DebounceMode = (typeof DEBOUNCE_MODES)[number];

/**
 * Debounce by key (JobSpec.debounce). Keys are per tenant and queue.
 * - trailing (default): while the key's job is pending and unclaimed, an enqueue replaces its
 *   payload and moves its run_at to now + windowMs (never past maxWaitMs after the enqueue that
 *   created it); the enqueue answers that job. Once a worker claims it, the next enqueue creates
 *   a new job.
 * - leading: the first enqueue creates a job (run as the spec says, at once by default); enqueues
 *   within windowMs of the last one are dropped, answering that job, until maxWaitMs after it.
 */
export interface DebounceOptions {
  key: string;
  /** The quiet period, in ms (1 ms to DEBOUNCE_WINDOW_MS_MAX). */
  windowMs: number;
  /** Default 'trailing'. */
  mode?: DebounceMode;
  /** Bound on how long a burst may hold the key's job back (trailing) or keep dropping (leading), in ms; at least windowMs. */
  maxWaitMs?: number;
}

/**
 * Throttle by key (JobSpec.throttle): at most `limit` (default 1) jobs are created per window of
 * windowMs, which opens at the enqueue that creates the first; further enqueues in the window are
 * dropped, answering the last job created. Keys are per tenant and queue.
 */
export interface ThrottleOptions {
  key: string;
  /** The window, in ms (1 ms to DEBOUNCE_WINDOW_MS_MAX). */
  windowMs: number;
  /** Jobs created per window; default 1. */
  limit?: number;
}

/** The rule a job was enqueued under, stored with it (Job.enqueueWindow). */
export type EnqueueWindow =
  | { kind: 'debounce'; key: string; windowMs: number; mode: DebounceMode; maxWaitMs: number | null }
  | { kind: 'throttle'; key: string; windowMs: number; limit: number };

/** What a producer submits. */
export interface JobSpec {
  jobType: string;
  payload?: unknown;
  queue?: string;
  tenantId?: string;
  /** Higher runs first. Default 0. */
  priority?: number;
  /** Absolute start time. Mutually exclusive with delayMs. */
  runAt?: Date;
  /** Delay resolved by the database clock (now() + delayMs). */
  delayMs?: number;
  /** Attempt budget including the first run. Default from config (5). */
  maxAttempts?: number;
  /** A second job with the same (tenantId, idempotencyKey) returns the first. */
  idempotencyKey?: string;
  /** Flow control: jobs sharing a key share its caps and rate limits across the fleet (docs/flow-control.md). */
  concurrencyKey?: string;
  /** This job's own cap on how many jobs of its key run at once (needs concurrencyKey). */
  concurrencyLimit?: number;
  /**
   * Jobs (ids, same tenant) that must succeed before this one runs: until then it is `waiting`.
   * A parent that already succeeded counts as done; an unknown id is INVALID_ARGUMENT.
   */
  dependsOn?: string[];
  /**
   * When a parent dead-letters or is cancelled: 'cancel' (default) cancels this job (and its own
   * dependents), its last error naming the parent; 'run' counts that parent as done.
   */
  onParentFailure?: OnParentFailure;
  /** Debounce by key (docs/debounce.md). Not with throttle, idempotencyKey or dependsOn; trailing: not with runAt or delayMs. */
  debounce?: DebounceOptions;
  /** Throttle by key (docs/debounce.md). Not with debounce, idempotencyKey or dependsOn. */
  throttle?: ThrottleOptions;
}

/** What a dependent job does when a parent dead-letters or is cancelled (JobSpec.onParentFailure). */
export const ON_PARENT_FAILURE = ['cancel', 'run'] as const;
/** One of ON_PARENT_FAILURE: 'cancel' (the default) or 'run'. */
export type OnParentFailure = (typeof ON_PARENT_FAILURE)[number];

/**
 * A stored job, and whether this call created it (false for a duplicate key, or when a debounce
 * or throttle folded the enqueue into `job` or dropped it: then `collapsedBy` says which).
 */
export interface InsertedJob {
  job: Job;
  created: boolean;
  /** 'debounce' or 'throttle' when that rule kept this enqueue from creating a job; absent otherwise. */
  collapsedBy?: 'debounce' | 'throttle';
}

/** Why nothing may run an enqueued job yet. It is stored all the same: a worker or handler may be deployed later. */
export const ENQUEUE_WARNING_CODES = ['NO_WORKER_FOR_QUEUE', 'NO_HANDLER_FOR_JOB_TYPE'] as const;
/** One of ENQUEUE_WARNING_CODES. */
export type EnqueueWarningCode = (typeof ENQUEUE_WARNING_CODES)[number];

/** Why nothing may run a job just enqueued (no worker for its queue, no handler for its type): in EnqueueResult.warnings. */
export interface EnqueueWarning {
  code: EnqueueWarningCode;
  message: string;
  queue: string;
  jobType: string;
}

/** Result of an enqueue: the job, whether this call created it, and what may keep it from running. */
export interface EnqueueResult extends InsertedJob {
  /** Empty when a live worker serves the job's queue with a handler for its type (as of a few seconds ago). */
  warnings: EnqueueWarning[];
}
