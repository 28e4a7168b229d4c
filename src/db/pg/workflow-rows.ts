// Maps snake_case rows of the workflow statements to the domain's run, step and history
// types. Ids arrive as text (the statements cast them), so nothing here parses a bigint.

import type { HistoryStep, LoadedRun } from '../../driver/workflow-store.ts';
import type { BlockedReason, RunDetail, RunState, RunSummary, StepInfo } from '../../types/workflow.ts';

export interface SummaryRow {
  id: string;
  name: string;
  tenant_id: string;
  state: RunState;
  job_id: string | null;
  progress: number;
  wait_event: string | null;
  wake_at: Date | null;
  blocked_reason: BlockedReason | null;
  replay_count: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  deadline_at: Date | null;
}

export function toSummary(r: SummaryRow): RunSummary {
  return {
    id: r.id,
    name: r.name,
    tenantId: r.tenant_id,
    state: r.state,
    jobId: r.job_id,
    progress: r.progress,
    waitEvent: r.wait_event,
    wakeAt: r.wake_at,
    blockedReason: r.blocked_reason,
    replayCount: r.replay_count,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    deadlineAt: r.deadline_at,
  };
}

export interface LoadRow {
  marked: boolean;
  crashes: number;
  id: string;
  name: string;
  tenant_id: string;
  input: unknown;
  state: LoadedRun['state'];
  job_id: string | null;
  output: unknown;
  wait_event: string | null;
  parent_run_id: string | null;
  now_ms: number;
  event_ready: boolean;
  deadline_at: Date | null;
  steps: HistoryStep[];
}

export function toLoaded(r: LoadRow): LoadedRun & { marked: boolean } {
  return {
    marked: r.marked,
    crashes: r.crashes,
    id: r.id,
    name: r.name,
    tenantId: r.tenant_id,
    input: r.input,
    state: r.state,
    jobId: r.job_id,
    output: r.output,
    waitEvent: r.wait_event,
    parentRunId: r.parent_run_id,
    eventReady: r.event_ready,
    deadlineAt: r.deadline_at,
    nowMs: Number(r.now_ms),
    steps: r.steps,
  };
}

/** A run as get and getInTenant answer it. */
export type DetailRow = SummaryRow & {
  input: unknown;
  output: unknown;
  attempt: number | null;
  max_attempts: number | null;
  errors: RunDetail['errors'] | null;
  dead_letter_reason: string | null;
};

/** A step as steps and stepsInTenant answer it. */
export interface StepRow {
  name: string;
  occurrence: number;
  seq: number;
  kind: StepInfo['kind'];
  status: StepInfo['status'];
  attempts: number;
  output: unknown;
  error: unknown;
  wait_event: string | null;
  wake_at: Date | null;
  started_at: Date;
  finished_at: Date | null;
}

const stepKey = (name: string, occurrence: number) => (occurrence === 1 ? name : `${name}#${occurrence}`);

export function toDetail(r: DetailRow, steps: StepRow[]): RunDetail {
  return {
    ...toSummary(r),
    input: r.input,
    output: r.output,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    errors: r.errors ?? [],
    deadLetterReason: r.dead_letter_reason,
    steps: steps.map((s) => ({
      key: stepKey(s.name, s.occurrence),
      name: s.name,
      occurrence: s.occurrence,
      seq: s.seq,
      kind: s.kind,
      status: s.status,
      attempts: s.attempts,
      output: s.output,
      error: s.error,
      waitEvent: s.wait_event,
      wakeAt: s.wake_at,
      startedAt: s.started_at,
      finishedAt: s.finished_at,
    })),
  };
}
