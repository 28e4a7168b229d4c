// The claim's rows, from the statement's answer to leased jobs (the SQL is queries/job-lease.ts
// `claim`). The hot path: rows come as arrays, times as epoch milliseconds, one object per job.

import type { JobClaimParams } from '../../driver/executor.ts';
import type { AttemptError, LeasedJob } from '../../types/job.ts';
import type { TraceCarrier } from '../../types/trace.ts';
import { compareIds } from './rows.ts';

/**
 * A row of the claim statement, read in array mode (no per-row object keyed by column name):
 * the lease's columns in RETURNING order, times as float8 epoch milliseconds.
 */
export type ClaimRow = [
  id: string,
  tenant_id: string,
  job_type: string,
  payload: unknown,
  priority: number,
  attempt: number,
  max_attempts: number,
  lease_token: string,
  idempotency_key: string | null,
  last_error: AttemptError | null,
  /** NULL for an empty history (a job's first attempt). */
  errors: AttemptError[] | null,
  replay_count: number,
  run_at_ms: number,
  created_at_ms: number,
  /** The claim's transaction time: updated_at, started_at when claimed into running, and expiry - leaseMs. */
  now_ms: number,
  trace_context: TraceCarrier | null,
];

const CLAIM_COLUMNS = [
  'id',
  'tenant_id',
  'job_type',
  'payload',
  'priority',
  'attempt',
  'max_attempts',
  'lease_token',
  'idempotency_key',
  'last_error',
  'errors',
  'replay_count',
  'run_at_ms',
  'created_at_ms',
  'now_ms',
  'trace_context',
] as const;

/** A claim row that came back as an object (a pool that ignored rowMode), as ClaimRow. */
export function claimRowFromObject(r: Record<string, unknown>): ClaimRow {
  return CLAIM_COLUMNS.map((c) => r[c]) as ClaimRow;
}

/** What the claim's caller knows without reading it back. */
export interface ClaimedAs {
  queue: string;
  owner: string;
  state: 'leased' | 'running';
  leaseMs: number;
}

/** Claim order (priority DESC, run_at, id), the order the claim picked its rows in. */
export function claimOrder(a: ClaimRow, b: ClaimRow): number {
  return b[4] - a[4] || a[12] - b[12] || compareIds(a[0], b[0]);
}

/** The hot path's mapper: one object per claimed job, no date-string parsing. */
export function claimRowToJob(r: ClaimRow, as: ClaimedAs): LeasedJob {
  const nowMs = r[14];
  const now = new Date(nowMs);
  return {
    id: r[0],
    tenantId: r[1],
    queue: as.queue,
    jobType: r[2],
    payload: r[3],
    priority: r[4],
    runAt: new Date(r[12]),
    attempt: r[5],
    maxAttempts: r[6],
    idempotencyKey: r[8],
    replayCount: r[11],
    errors: r[10] ?? [],
    lastError: r[9],
    createdAt: new Date(r[13]),
    updatedAt: now,
    startedAt: as.state === 'running' ? now : null,
    state: as.state,
    token: r[7],
    leaseOwner: as.owner,
    leaseExpiresAt: new Date(nowMs + as.leaseMs),
    trace: r[15],
    // A claimable (pending) job never has a cancel request (migration 0020's CHECK).
    cancelRequestedAt: null,
  };
}

/**
 * The claimed jobs in claim order. UPDATE ... RETURNING has no order: it is restored here
 * (cheaper than in SQL). Rows come back in id order, which is claim order when one priority's
 * ids grow with run_at (the common case): a linear check then spares the sort.
 */
export function claimJobs(answer: ClaimRow[], p: JobClaimParams): LeasedJob[] {
  // A pool-like object of the caller's may drop rowMode and answer with objects: the jobs
  // are claimed by now, so read those by column name rather than lose them.
  const rows =
    answer.length > 0 && !Array.isArray(answer[0])
      ? answer.map((r) => claimRowFromObject(r as unknown as Record<string, unknown>))
      : answer;
  for (let i = 1; i < rows.length; i++) {
    if (claimOrder(rows[i - 1]!, rows[i]!) > 0) {
      rows.sort(claimOrder);
      break;
    }
  }
  const as = { queue: p.queue, owner: p.owner, state: p.intoRunning ? 'running' : 'leased', leaseMs: p.leaseMs } as const;
  return rows.map((r) => claimRowToJob(r, as));
}
