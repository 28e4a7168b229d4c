// Maps snake_case job rows to the Job union. The CHECK constraints of the jobs
// table guarantee the per-state fields exist, so the casts here are safe.

import type { AttemptError, EnqueueWindow, Job, JobProgress, JobState, JobSummary } from '../../types/job.ts';
import type { TraceCarrier } from '../../types/trace.ts';

export interface JobRow {
  id: string;
  tenant_id: string;
  queue: string;
  job_type: string;
  payload: unknown;
  priority: number;
  state: JobState;
  run_at: Date;
  attempt: number;
  max_attempts: number;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  idempotency_key: string | null;
  last_error: AttemptError | null;
  errors: AttemptError[];
  dead_letter_reason: string | null;
  result: unknown;
  replay_count: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
  trace_context: TraceCarrier | null;
  /** Migration 0016: the parents named at enqueue, and how many are unfinished while waiting. */
  depends_on?: Array<string | number> | null;
  waiting_for?: number | null;
  /** Migration 0020. */
  cancel_requested_at?: Date | null;
  /** Migration 0031. */
  progress?: JobProgress | null;
  /** Migration 0035. */
  enqueue_window?: EnqueueWindow | null;
}

export function rowToJob(r: JobRow): Job {
  const base = {
    id: String(r.id),
    tenantId: r.tenant_id,
    queue: r.queue,
    jobType: r.job_type,
    payload: r.payload,
    priority: r.priority,
    runAt: r.run_at,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    idempotencyKey: r.idempotency_key,
    replayCount: r.replay_count,
    errors: r.errors ?? [],
    lastError: r.last_error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    startedAt: r.started_at,
    trace: r.trace_context ?? null,
    cancelRequestedAt: r.cancel_requested_at ?? null,
    ...(r.progress !== undefined ? { progress: r.progress } : {}),
    ...(r.enqueue_window ? { enqueueWindow: r.enqueue_window } : {}),
    ...(r.depends_on ? { dependsOn: r.depends_on.map(String) } : {}),
  };
  const lastToken = r.lease_token === null ? null : String(r.lease_token);
  switch (r.state) {
    case 'pending':
      return { ...base, state: 'pending', lastToken };
    case 'waiting':
      return { ...base, state: 'waiting', waitingFor: r.waiting_for ?? 0 };
    case 'leased':
    case 'running':
      return {
        ...base,
        state: r.state,
        token: String(r.lease_token),
        leaseOwner: r.lease_owner as string,
        leaseExpiresAt: r.lease_expires_at as Date,
      };
    case 'succeeded':
      return { ...base, state: 'succeeded', token: String(r.lease_token), result: r.result, finishedAt: r.finished_at as Date };
    case 'dead_lettered':
      return { ...base, state: 'dead_lettered', lastToken, reason: r.dead_letter_reason as string, finishedAt: r.finished_at as Date };
    case 'cancelled':
      return { ...base, state: 'cancelled', lastToken, finishedAt: r.finished_at as Date };
  }
}

/** A listing row (summaryColumns in queries/job-fragments.ts). */
export interface JobSummaryRow extends Omit<JobRow, 'errors' | 'last_error'> {
  payload_bytes: number;
  payload_inline: boolean;
  result_bytes: number;
  result_inline: boolean;
  error_count: number;
  last_error: Omit<AttemptError, 'stack'> | null;
}

export function rowToSummary(r: JobSummaryRow): JobSummary {
  const full = rowToJob({ ...r, errors: [], last_error: null });
  const { errors: _errors, lastError: _lastError, payload: _payload, ...rest } = full;
  // A value the listing left out (too large) is absent, not null.
  const payload = r.payload_inline ? { payload: r.payload } : {};
  const bounded = { ...payload, payloadBytes: r.payload_bytes, errorCount: r.error_count, lastError: r.last_error };
  if (rest.state !== 'succeeded') return { ...rest, ...bounded };
  const { result: _result, ...done } = rest;
  const result = r.result_inline ? { result: r.result } : {};
  return { ...done, ...bounded, ...result, resultBytes: r.result_bytes };
}

/** Orders bigint ids given as decimal strings. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
