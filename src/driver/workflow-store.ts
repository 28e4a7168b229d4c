// The seam between workflow execution and the database: one method per operation,
// returning domain types. Every write an execution makes carries its driving job's
// lease (job id + token) and is refused once that lease is no longer current.
// @internal — not a public API.

import type { EnqueueWindow } from '../types/job.ts';
import type { TraceCarrier } from '../types/trace.ts';
import type { ListRunsFilter, RunDetail, RunState, RunSummary, StartRunResult, StepKind, StepStatus } from '../types/workflow.ts';
import type { Queryable } from './queryable.ts';

export interface RunLease {
  jobId: string;
  token: string;
  runId: string;
}

export interface StepKey {
  name: string;
  occurrence: number;
}

/** A step as an execution replays it. */
export interface HistoryStep extends StepKey {
  seq: number;
  kind: StepKind;
  status: StepStatus;
  output: unknown;
  attempts: number;
}

export interface LoadedRun {
  id: string;
  name: string;
  tenantId: string;
  input: unknown;
  /** As stored (never dead_lettered). */
  state: 'running' | 'sleeping' | 'waiting' | 'blocked' | 'succeeded' | 'cancelled' | 'timed_out';
  jobId: string | null;
  output: unknown;
  waitEvent: string | null;
  parentRunId: string | null;
  /** An event the run waits for has arrived. */
  eventReady: boolean;
  /** Executions in a row that loaded the run and crashed (lease expired, worker gone) since its last step commit or wait over. */
  crashes: number;
  /** When the run times out (runTimeoutMs); null: never. */
  deadlineAt: Date | null;
  nowMs: number;
  steps: HistoryStep[];
}

export type LoadResult = (LoadedRun & { marked: boolean }) | null;

export type StepCommit = RunLease & StepKey & { seq: number; output: string; startedAt: Date };

export type RunCompletion = RunLease & { output: string };

/** Why an execution's write was refused. */
export type Refusal =
  | { kind: 'lease_lost' }
  | { kind: 'cancelled' }
  | { kind: 'finished'; output: unknown }
  /** A replay gave the run a new driving job: this one has nothing left to do. */
  | { kind: 'superseded' }
  /** The run reached its deadline (recorded now if it was not yet); `wokeQueue`: its waiting parent's queue, made due. */
  | { kind: 'timed_out'; wokeQueue: string | null };

export type Fenced<T> = ({ ok: true } & T) | { ok: false };

export interface WaitRow {
  kind: StepKind;
  status: StepStatus;
  output: unknown;
  wakeAt: Date | null;
  due: boolean;
}

/** A run locked for an operator action, with the state a reader sees. */
export interface RunForAction {
  state: RunState;
  jobId: string | null;
  jobState: string | null;
}

/** A workflow as the registry of defined workflows records it: the driving job's queue and attempt budget, and its runs' default timeout. */
export interface WorkflowDefinitionRow {
  name: string;
  queue: string;
  maxAttempts: number;
  /** ms; null: runs have no deadline unless their start gives one. */
  runTimeoutMs: number | null;
}

export interface WorkflowStore {
  /** Records (or refreshes) the workflows an engine defines in the registry of defined workflows. */
  workflowRegister(defs: WorkflowDefinitionRow[]): Promise<void>;
  /** The registry's row of workflow `name`, or null when no process ever defined it. */
  workflowDefinition(name: string): Promise<Omit<WorkflowDefinitionRow, 'name'> | null>;
  /** The run and its driving job in one transaction; on `on`, the caller's transaction, when given. */
  workflowStartRun(
    p: {
      name: string;
      tenantId: string;
      input: string;
      idempotencyKey: string | null;
      queue: string;
      jobType: string;
      maxAttempts: number;
      parentRunId?: string | null;
      /** ms from the start (database clock) to the run's deadline; null or absent: none. */
      runTimeoutMs?: number | null;
      /** The producer's trace context, stored with the driving job. */
      traceContext?: TraceCarrier | null;
      /**
       * Debounce or throttle by key (docs/debounce.md, "Workflow runs"): the start runs under its
       * key's lock and may fold into the key's pending run or be dropped (`collapsedBy`). Never
       * with an idempotency key.
       */
      window?: EnqueueWindow;
    },
    on?: Queryable,
  ): Promise<StartRunResult>;
  /** The run as it was, its steps, and `marked`: the lease is current and the run (now) running. */
  workflowLoad(p: RunLease): Promise<LoadResult>;
  /** `load` for several executions in one statement; answers in the order asked. */
  workflowLoadMany(p: RunLease[]): Promise<LoadResult[]>;
  /** `won`: this write committed `output`; else another execution did and `output` is its. */
  workflowCommitStep(p: StepCommit): Promise<Fenced<{ won: boolean; output: unknown }>>;
  /**
   * `commitStep` for several executions in one statement (one transaction), each row fenced by
   * its own lease; answers in the order asked. Commits of one step in the same batch converge
   * like concurrent ones: one wins, the others answer its output.
   */
  workflowCommitSteps(p: StepCommit[]): Promise<Array<Fenced<{ won: boolean; output: unknown }>>>;
  workflowReadStep(p: { runId: string } & StepKey): Promise<{ kind: StepKind; status: StepStatus; output: unknown } | null>;
  workflowFailStep(p: RunLease & StepKey & { seq: number; error: unknown; startedAt: Date }): Promise<void>;
  workflowArmWait(
    p: RunLease &
      StepKey & {
        seq: number;
        kind: 'sleep' | 'event' | 'children';
        /** An event wait's names (any one ends it) and match (JSON text the payload must contain; null: any). */
        wait: { names: string[]; match: string | null } | null;
        delayMs: number | null;
        until: Date | null;
      },
  ): Promise<Fenced<WaitRow>>;
  /** `done` false: the wait is not over (no event that ends it, time not come). The names and match armed with the step decide. */
  workflowFinishWait(p: RunLease & StepKey & { stepKey: string }): Promise<Fenced<{ done: boolean; output: unknown }>>;
  /**
   * Gives the driving job back (attempt refunded), due at the earliest wake-up time of the waits
   * `steps` (never after the run's deadline), or now if an event that ends one of the run's
   * waiting event steps (its names, match and deadline) is here. `waitEvent`: a name one of them
   * waits for, shown in listings.
   */
  workflowSuspend(
    p: RunLease & { steps: StepKey[]; state: 'sleeping' | 'waiting'; waitEvent: string | null },
  ): Promise<{ ok: true; queue: string; due: boolean } | { ok: false }>;
  /** Records a ctx.patched() marker (idempotent), fenced like every write. */
  workflowMarkPatch(p: RunLease & { name: string; seq: number }): Promise<Fenced<object>>;
  /** Stops the run as blocked with `reason` (JSON text of a BlockedReason), fenced like every write. */
  workflowBlockRun(p: RunLease & { reason: string }): Promise<Fenced<object>>;
  workflowCompleteRun(p: RunCompletion): Promise<Fenced<{ output: unknown }>>;
  /** `completeRun` for several executions in one statement, each fenced by its own lease. */
  workflowCompleteRuns(p: RunCompletion[]): Promise<Array<Fenced<{ output: unknown }>>>;
  workflowChildOutcomes(p: {
    runIds: string[];
  }): Promise<Array<{ id: string; state: RunState; output: unknown; lastError: { name: string; message: string } | null }>>;
  workflowCompleteWait(p: RunLease & StepKey & { output: string }): Promise<Fenced<{ done: boolean; output: unknown }>>;
  /** Links plain jobs to the run that awaits them: each one's finish makes the waiting run due. */
  workflowLinkChildJobs(p: { runId: string; jobIds: string[]; channel: string }): Promise<void>;
  workflowJobOutcomes(p: {
    jobIds: string[];
  }): Promise<Array<{ id: string; state: string; result: unknown; lastError: { name: string; message: string } | null }>>;
  /** A plain child job not over is being written right now (its outcome may be committing): wake the run to look again. */
  workflowChildJobsSettling(p: { jobIds: string[] }): Promise<boolean>;
  /** Makes the parent of child run `runId` due now if it waits; answers its queue then. */
  workflowWakeParent(p: { runId: string }): Promise<string | null>;
  /** Makes the run's own pending job due now (a wake-up it may have missed); answers its queue then. */
  workflowWakeRun(p: { jobId: string }): Promise<string | null>;
  /** Why a fenced write of this lease was refused. */
  workflowRefusal(p: RunLease): Promise<Refusal>;
  /** null: no such run; `conflict`: its state forbids the event. */
  workflowSendEvent(p: {
    runId: string;
    name: string;
    payload: string;
    idempotencyKey: string | null;
  }): Promise<{ eventId: string; duplicate: boolean; wokeQueue: string | null } | { conflict: RunState } | null>;
  /** `allowed` decides from the locked run; false answers { conflict }. */
  workflowCancelRun(p: { runId: string; allowed: (r: RunForAction) => boolean }): Promise<RunSummary | { conflict: RunState } | null>;
  workflowReplayRun(p: {
    runId: string;
    allowed: (r: RunForAction) => boolean;
    jobType: (name: string) => string;
    /** Of a new driving job (the old one is gone): undefined takes the registry's, else 'default'. */
    queue: (name: string) => string | undefined;
    /** Of a new driving job: undefined takes the registry's, else 5. */
    maxAttempts: (name: string) => number | undefined;
  }): Promise<{ run: RunSummary; queue: string } | { conflict: RunState } | null>;
  /** With tenantId, null for another tenant's run: the statements themselves are scoped. */
  workflowGetRun(p: { runId: string; tenantId?: string | undefined }): Promise<RunDetail | null>;
  workflowListRuns(p: ListRunsFilter & { limit: number; offset: number }): Promise<RunSummary[]>;
  workflowCountRunsByState(): Promise<Array<{ name: string; state: RunState; n: number }>>;
  /** Folds the finished runs' count deltas into their counts (leader-only upkeep); answers how many it folded. */
  workflowFoldRunCounts(): Promise<number>;
}
