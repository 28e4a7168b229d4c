// The public shapes of durable workflows: the function a workflow is, the context it
// runs with, and a run as reads return it. States are a discriminated union of strings.

import type { AttemptError, DebounceOptions, JobProgress, JobSpec, ThrottleOptions } from './job.ts';
import type { TraceCarrier } from './trace.ts';

/**
 * A run's state. dead_lettered is the driving job's (its attempt budget spent, or a terminal error).
 * blocked: its history cannot be replayed by its code (blockedReason says why); replay resumes it, cancel ends it.
 * timed_out: past its runTimeoutMs.
 */
export const RUN_STATES = ['running', 'sleeping', 'waiting', 'blocked', 'succeeded', 'dead_lettered', 'cancelled', 'timed_out'] as const;
/** One of RUN_STATES. */
export type RunState = (typeof RUN_STATES)[number];

/** What a recorded workflow step is: a step function, a sleep, an event wait, children, or a ctx.patched() marker. */
export const STEP_KINDS = ['step', 'sleep', 'event', 'children', 'patch'] as const;
/** One of STEP_KINDS. */
export type StepKind = (typeof STEP_KINDS)[number];
/** How a recorded workflow step stands. */
export const STEP_STATUSES = ['succeeded', 'failed', 'waiting'] as const;
/** One of STEP_STATUSES. */
export type StepStatus = (typeof STEP_STATUSES)[number];

/** What a step's function is given. */
export interface StepContext {
  /** `runId:key` (with `#n` for the n-th occurrence of a repeated key): stable across retries, an idempotency key for side effects. */
  readonly idempotencyKey: string;
  /**
   * 1 on the step's first attempt; an attempt that failed or whose execution crashed (kill -9, lease
   * lost) counts. Crashes are counted by execution, not by step (docs/workflows.md, step.attempt).
   */
  readonly attempt: number;
  /** Aborted when the driving job's lease is lost (or the drain deadline passes). */
  readonly signal: AbortSignal;
  /** Reports the driving job's progress, as a handler's ctx.progress does (docs/library.md, Progress). */
  progress(value: JobProgress): void;
}

/** An event as a wait returns it. */
export interface WorkflowEvent<T = unknown> {
  name: string;
  payload: T;
}

/** What a workflow function is given: its input, the run's id, and step, sleep, sleepUntil, waitForEvent and all (docs/workflows.md). */
export interface WorkflowContext<I = unknown> {
  readonly runId: string;
  readonly name: string;
  readonly tenantId: string;
  readonly input: I;
  /** The driving job's lease token for this execution (strictly increasing). */
  readonly token: string;
  readonly signal: AbortSignal;
  /**
   * Runs `fn` once per run (plus retries while it throws) and commits its output before
   * going on; later executions get the committed (jsonb-normalised) output without running it.
   * A key used again in the same run is its next occurrence (`key#2`, ...). Steps (and waits)
   * started together run concurrently and are memoized by key, so they may finish in any order;
   * a key still in flight cannot be used again (TerminalError).
   */
  step<T>(key: string, fn: (step: StepContext) => T | Promise<T>): Promise<T>;
  /**
   * Versioning (docs/workflows.md, Versioning): true when this run reaches this point under code
   * that has patch `id` (a marker goes into its history, so its later executions answer true
   * too), false when its history shows older code went past this point without the patch.
   */
  patched(id: string): Promise<boolean>;
  /** The patch `id` is retired (every run that could take the old branch has finished): a no-op kept for the code's record. */
  deprecatePatch(id: string): void;
  /** Ends this execution (the worker is freed) and resumes the run after `ms`. */
  sleep(key: string, ms: number): Promise<void>;
  /** Ends this execution and resumes the run at `until`. */
  sleepUntil(key: string, until: Date): Promise<void>;
  /**
   * The next event sent to this run (kept if it arrived earlier) whose name is `eventName` (or
   * any of them: the first to arrive wins; `name` says which) and whose payload contains
   * `opts.match`, or null once `timeoutMs` passed without one. An event that arrived after the
   * deadline (database clock) never ends the wait, however late the run resumes; events that do
   * not end it are kept for later waits. Waits started together each keep their own names, match
   * and deadline. Waiting ends the execution (once nothing started with it still runs) and frees the worker.
   */
  waitForEvent<T = unknown>(key: string, eventName: string | string[], opts?: WaitForEventOptions): Promise<WorkflowEvent<T> | null>;
  /**
   * Fan-out/fan-in: starts one child run per spec (once per run, whatever the retries) and
   * waits, without holding a worker, until every child has finished; answers each child's
   * outcome in input order. Children run in the parent's tenant; a cancel of the parent
   * cancels its live children.
   */
  all<T = unknown>(key: string, children: ChildSpec[]): Promise<Array<ChildResult<T>>>;
}

/**
 * What ctx.all starts: a child run ({ workflow, input }) or a plain job ({ job }: a job spec,
 * enqueued in the run's tenant; dependsOn is allowed).
 */
export type ChildSpec = { workflow: string; input?: unknown } | { job: Omit<JobSpec, 'tenantId' | 'idempotencyKey'> };

/** How a child ended, as ctx.all returns it. */
export interface ChildResult<T = unknown> {
  /** The child run; null for a plain job. */
  runId: string | null;
  /** The plain job; null for a child run. */
  jobId: string | null;
  /** timed_out: a child run past its runTimeoutMs. */
  state: 'succeeded' | 'dead_lettered' | 'cancelled' | 'timed_out';
  /** The child's output (a job's result) when it succeeded, else null. */
  output: T | null;
  /** The last error of its (driving) job when it dead-lettered or was cancelled for a failed parent, else null. */
  error: { name: string; message: string } | null;
}

/** A workflow: a function of its context, replayed from its recorded steps on every execution. */
export type WorkflowFn<I = unknown, O = unknown> = (ctx: WorkflowContext<I>) => Promise<O> | O;

/** What checks a workflow's input: anything with parse(value) that throws on a bad value (a zod schema, for instance). */
export interface InputSchema {
  parse(value: unknown): unknown;
}

/** Options of ctx.waitForEvent. */
export interface WaitForEventOptions {
  /** ms from the wait's start (database clock) until it ends with null. Default: no timeout. */
  timeoutMs?: number;
  /**
   * A JSON object the event's payload must contain (PostgreSQL jsonb `@>`: every key, at any
   * depth, with an equal value; arrays contain the elements given). E.g. `{ orderId: ctx.input.orderId }`.
   */
  match?: Record<string, unknown>;
}

/** Options of baton.workflow: the driving job's queue and attempt budget, its input's schema and its runs' timeout. */
export interface WorkflowOptions {
  /**
   * Checks each run's input (as stored, jsonb-normalised). A start in a process that defines the
   * workflow refuses a bad input (INVALID_ARGUMENT); a run started elsewhere (another process,
   * HTTP, cron) is checked by its first execution, before any step, and a bad input dead-letters it
   * at once with the reason (a run already under way is not checked again). Checked only: the function still reads the input as stored.
   */
  input?: InputSchema;
  /** Queue of the driving job. Default 'default'. */
  queue?: string;
  /** Attempt budget of the driving job (failed executions before the run dead-letters). Default 5. */
  maxAttempts?: number;
  /**
   * Bounds each run as a whole, in ms from its start (database clock): past it the run is
   * timed_out, whether it runs, sleeps, waits or its worker died; a running step's signal is
   * aborted, no later step output is accepted, and its live child runs are cancelled. A start's
   * own runTimeoutMs wins. Default: none.
   */
  runTimeoutMs?: number;
}

/** Options of baton.startWorkflow: the run's tenant, idempotency key, timeout, trace context, debounce or throttle. */
export interface StartRunOptions {
  tenantId?: string;
  /** A second start with the same (tenant, key) returns the first run (duplicate: true). Not with debounce or throttle. */
  idempotencyKey?: string;
  /** The run's timeout in ms from now (database clock); overrides the workflow's runTimeoutMs. */
  runTimeoutMs?: number;
  /**
   * The trace context the run's executions continue (each one's span is its child). Default: the
   * active one, captured as enqueue does.
   */
  traceContext?: TraceCarrier;
  /**
   * Debounce the starts of a key, per tenant and the workflow's queue (docs/debounce.md,
   * "Workflow runs"). Trailing (default): while the key's run has not started executing, a start
   * replaces its input and pushes its start to now + windowMs (bounded by maxWaitMs); a start that
   * would push it past the run's deadline (runTimeoutMs) creates a new run instead. Leading:
   * starts within the window are dropped. Not with throttle or idempotencyKey.
   */
  debounce?: DebounceOptions;
  /** At most `limit` runs per window of a key (docs/debounce.md); further starts are dropped. Not with debounce or idempotencyKey. */
  throttle?: ThrottleOptions;
}

/** One recorded step of a run, as RunDetail lists them. */
export interface StepInfo {
  /** The key as the code names it (`name`, or `name#n` for the n-th occurrence). */
  key: string;
  name: string;
  occurrence: number;
  seq: number;
  kind: StepKind;
  status: StepStatus;
  attempts: number;
  output: unknown;
  error: unknown;
  waitEvent: string | null;
  wakeAt: Date | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** Why a run is blocked: NON_DETERMINISM, its code does not replay its history at the steps named. */
export interface BlockedReason {
  code: 'NON_DETERMINISM';
  message: string;
  /** The step keys involved: what the code reached and what the history holds there. */
  steps: string[];
}

/** A workflow run as listings show it: name, tenant, state, progress, what it waits for. */
export interface RunSummary {
  id: string;
  name: string;
  tenantId: string;
  state: RunState;
  jobId: string | null;
  /** The position after the furthest committed step: completed steps, for steps run one after another; never decreases. */
  progress: number;
  waitEvent: string | null;
  wakeAt: Date | null;
  /** Why a blocked run stopped; null in every other state. */
  blockedReason: BlockedReason | null;
  replayCount: number;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /** When the run times out (runTimeoutMs); null: never. */
  deadlineAt: Date | null;
}

/** A workflow run in full: input, output, attempts and errors, and every recorded step. */
export interface RunDetail extends RunSummary {
  input: unknown;
  output: unknown;
  /** The driving job's attempt and budget, and its failure chain (oldest first). */
  attempt: number | null;
  maxAttempts: number | null;
  errors: AttemptError[];
  deadLetterReason: string | null;
  steps: StepInfo[];
}

/**
 * What baton.startWorkflow answers: the run, whether it already existed (same idempotency key),
 * and whether a debounce or throttle kept this start from creating a run.
 */
export interface StartRunResult {
  run: RunSummary;
  duplicate: boolean;
  /**
   * 'debounce' or 'throttle' when that rule folded this start into `run` (its input is now this
   * start's) or dropped it (`run` holds the key); absent when a run was created or for a duplicate.
   */
  collapsedBy?: 'debounce' | 'throttle';
}

/** What baton.sendEvent answers: its id, whether it was a duplicate, whether it woke a run. */
export interface SendEventResult {
  eventId: string;
  duplicate: boolean;
  /** The event woke a run waiting for it. */
  resumed: boolean;
}

/** The filter and page of a workflow run listing. */
export interface ListRunsFilter {
  name?: string | undefined;
  state?: RunState | undefined;
  tenantId?: string | undefined;
  limit?: number | undefined;
  /** >= 0, default 0. Not with `cursor`. */
  offset?: number | undefined;
  /**
   * Keyset paging: the id of the last run of a full page, to read the page after it (the runs
   * older than it). Each page then costs what the first one does, however deep.
   */
  cursor?: string | undefined;
}

/** Workflow runs, `baton.workflows`: read, list, count, cancel and replay them (docs/workflows.md). */
export interface WorkflowRunsApi {
  /**
   * The run, or null. With `tenantId`, null for another tenant's run too, at the cost of an id
   * nobody has: the reads themselves are limited to the tenant.
   */
  getRun(runId: string, opts?: { tenantId?: string | undefined }): Promise<RunDetail | null>;
  /** Runs newest first, filtered by name, state and tenant; a full page goes on with `cursor` set to its last run's id. */
  listRuns(filter?: ListRunsFilter): Promise<RunSummary[]>;
  /** Cancels a running, sleeping, waiting or blocked run and its pending driving job; an execution in progress stops at its next step. */
  cancelRun(runId: string): Promise<RunSummary>;
  /** Resumes a dead-lettered, cancelled or blocked run at the step it stopped at; completed steps keep their outputs. */
  replayRun(runId: string): Promise<RunSummary>;
  /** Runs per workflow and state. */
  countRunsByState(): Promise<Array<{ name: string; state: RunState; n: number }>>;
  /** The workflows defined in this process. */
  names(): string[];
}
