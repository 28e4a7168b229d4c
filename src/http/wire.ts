// Domain objects -> JSON wire objects: camelCase fields as in the Job type,
// dates as ISO 8601 strings, ids and tokens as strings. Listing fields
// explicitly keeps internals off the wire; the client's types come from here.

import type { JSONValue } from 'hono/utils/types';
import type {
  AttemptError,
  BulkItemResult,
  EnqueueResult,
  ErrorCode,
  Job,
  JobSummary,
  QueuePauseState,
  Schedule,
  StateCounts,
  StatsSnapshot,
  WorkerInfo,
} from '../index.ts';
import { STATUS_BY_CODE } from './errors.ts';
import type { StatsSample } from './stats-history.ts';

const iso = (d: Date): string => d.toISOString();
const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);
/**
 * An attempt's time as the other wire times are (UTC, milliseconds, Z): PostgreSQL wrote it
 * into jsonb in the session's time zone with microseconds. Kept as is if it does not parse.
 */
const utcTime = (t: string): string => {
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? t : new Date(ms).toISOString();
};

/**
 * A failed attempt on the wire. The full job (GET /api/jobs/:id) carries each attempt's stack
 * as the handler threw it (bounded to 8,000 characters when stored), for the operator reading
 * the failure; listings leave stacks out. Errors of the API itself never carry one.
 */
export function toWireAttemptError(e: AttemptError): AttemptError {
  const wire = { attempt: e.attempt, token: e.token, kind: e.kind, name: e.name, message: e.message, at: utcTime(e.at) };
  return e.stack === undefined ? wire : { ...wire, stack: e.stack };
}

/** The fields a job and its summary share on the wire (not payload, result or errors). */
function wireCommon(job: Job | JobSummary) {
  return {
    id: job.id,
    tenantId: job.tenantId,
    queue: job.queue,
    jobType: job.jobType,
    priority: job.priority,
    runAt: iso(job.runAt),
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    idempotencyKey: job.idempotencyKey,
    replayCount: job.replayCount,
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
    startedAt: isoOrNull(job.startedAt),
    trace: job.trace,
    cancelRequestedAt: isoOrNull(job.cancelRequestedAt),
    ...(job.progress !== undefined ? { progress: job.progress } : {}),
    ...(job.enqueueWindow ? { enqueueWindow: job.enqueueWindow } : {}),
    ...(job.dependsOn ? { dependsOn: job.dependsOn } : {}),
  };
}

/** A job on the wire; a discriminated union on `state` like Job itself. */
export function toWireJob(job: Job) {
  const base = {
    ...wireCommon(job),
    payload: job.payload as JSONValue,
    errors: job.errors.map(toWireAttemptError),
    lastError: job.lastError ? toWireAttemptError(job.lastError) : null,
  };
  switch (job.state) {
    case 'pending':
      return { ...base, state: job.state, lastToken: job.lastToken };
    case 'waiting':
      return { ...base, state: job.state, waitingFor: job.waitingFor };
    case 'leased':
    case 'running':
      return {
        ...base,
        state: job.state,
        token: job.token,
        leaseOwner: job.leaseOwner,
        leaseExpiresAt: iso(job.leaseExpiresAt),
      };
    case 'succeeded':
      return { ...base, state: job.state, token: job.token, result: job.result as JSONValue, finishedAt: iso(job.finishedAt) };
    case 'dead_lettered':
      return { ...base, state: job.state, lastToken: job.lastToken, reason: job.reason, finishedAt: iso(job.finishedAt) };
    case 'cancelled':
      return { ...base, state: job.state, lastToken: job.lastToken, finishedAt: iso(job.finishedAt) };
  }
}

/**
 * A job as listings show it: `payload` (and a succeeded job's `result`) only when small,
 * with their stored sizes; the failure count and the last failure instead of the history.
 */
export function toWireSummary(job: JobSummary) {
  const base = {
    ...wireCommon(job),
    ...('payload' in job ? { payload: job.payload as JSONValue } : {}),
    payloadBytes: job.payloadBytes,
    errorCount: job.errorCount,
    lastError: job.lastError ? toWireAttemptError(job.lastError) : null,
  };
  switch (job.state) {
    case 'pending':
      return { ...base, state: job.state, lastToken: job.lastToken };
    case 'waiting':
      return { ...base, state: job.state, waitingFor: job.waitingFor };
    case 'leased':
    case 'running':
      return { ...base, state: job.state, token: job.token, leaseOwner: job.leaseOwner, leaseExpiresAt: iso(job.leaseExpiresAt) };
    case 'succeeded':
      return {
        ...base,
        state: job.state,
        token: job.token,
        ...('result' in job ? { result: job.result as JSONValue } : {}),
        resultBytes: job.resultBytes,
        finishedAt: iso(job.finishedAt),
      };
    case 'dead_lettered':
      return { ...base, state: job.state, lastToken: job.lastToken, reason: job.reason, finishedAt: iso(job.finishedAt) };
    case 'cancelled':
      return { ...base, state: job.state, lastToken: job.lastToken, finishedAt: iso(job.finishedAt) };
  }
}

export type WireJobSummary = ReturnType<typeof toWireSummary>;

/** Largest list of jobs one response carries (JSON bytes, about); rows past it are left for the next page. */
export const LIST_RESPONSE_MAX_BYTES = 1024 * 1024;

/**
 * Summaries on the wire, in order, while their JSON fits in LIST_RESPONSE_MAX_BYTES (the first
 * always goes). A summary is bounded, so this only bites on pages of large summaries.
 */
export function wireSummaries(jobs: readonly JobSummary[]): { jobs: WireJobSummary[]; truncated: boolean } {
  const out: WireJobSummary[] = [];
  let bytes = 0;
  for (const job of jobs) {
    const wire = toWireSummary(job);
    bytes += Buffer.byteLength(JSON.stringify(wire)) + 1;
    if (out.length > 0 && bytes > LIST_RESPONSE_MAX_BYTES) return { jobs: out, truncated: true };
    out.push(wire);
  }
  return { jobs: out, truncated: false };
}

export type WireJob = ReturnType<typeof toWireJob>;

/** `collapsedBy` when a debounce or throttle kept an enqueue from creating a job. */
export function collapsed(r: EnqueueResult): { collapsedBy?: 'debounce' | 'throttle' } {
  return r.collapsedBy ? { collapsedBy: r.collapsedBy } : {};
}

export function toWireResult(r: EnqueueResult) {
  return { created: r.created, ...collapsed(r), job: toWireJob(r.job), warnings: r.warnings };
}

export function toWireWorker(w: WorkerInfo) {
  return {
    id: w.id,
    hostname: w.hostname,
    pid: w.pid,
    queues: w.queues,
    jobTypes: w.jobTypes,
    inFlight: w.inFlight,
    startedAt: iso(w.startedAt),
    lastSeenAt: iso(w.lastSeenAt),
    alive: w.alive,
    leader: w.leader,
  };
}

export function toWireCounts(counts: StateCounts): StateCounts {
  return { ...counts };
}

/** A queue as listings show it: counts by state, and whether it is paused (since when). */
export function toWireQueue(q: { queue: string; paused: boolean; pausedAt: Date | null; counts: StateCounts }) {
  return { queue: q.queue, paused: q.paused, pausedAt: isoOrNull(q.pausedAt), counts: toWireCounts(q.counts) };
}

export function toWireQueueState(s: QueuePauseState) {
  return { queue: s.queue, paused: s.paused, pausedAt: isoOrNull(s.pausedAt) };
}

/** The chart history (stats-history.ts): samples oldest first. */
export function toWireStatsHistory(h: { intervalMs: number; windowSeconds: number }, samples: StatsSample[]) {
  return { intervalMs: h.intervalMs, windowSeconds: h.windowSeconds, samples: samples.map((s) => ({ ...s, at: iso(s.at) })) };
}

export function toWireStats(s: StatsSnapshot) {
  return { at: iso(s.at), queues: s.queues.map((q) => ({ ...toWireQueue(q), scheduled: q.scheduled })), window: s.window };
}

/**
 * A bulk call's per-id outcome: the state the action left the job in (read it in full with
 * GET /api/jobs/:id), or why it was refused; a 5xx-class refusal carries a generic message.
 */
export function toWireBulkItem(r: BulkItemResult) {
  if (r.ok) return { id: r.id, ok: true as const, state: r.job.state };
  // A malformed id cannot name a job: not found, as on the single-job routes.
  const error: { code: ErrorCode; message: string } =
    r.code === 'INVALID_ARGUMENT'
      ? { code: 'JOB_NOT_FOUND', message: 'job not found' }
      : { code: r.code, message: STATUS_BY_CODE[r.code] >= 500 ? 'not done: the server failed' : r.message };
  return { id: r.id, ok: false as const, error, ...(r.state ? { state: r.state } : {}) };
}

/** A schedule on the wire. */
export function toWireSchedule(s: Schedule) {
  return {
    id: s.id,
    tenantId: s.tenantId,
    name: s.name,
    cron: s.cron,
    timezone: s.timezone,
    jobType: s.jobType,
    workflow: s.workflow,
    queue: s.queue,
    payload: s.payload as JSONValue,
    priority: s.priority,
    maxAttempts: s.maxAttempts,
    misfirePolicy: s.misfirePolicy,
    catchUpLimit: s.catchUpLimit,
    status: s.status,
    disabledReason: s.disabledReason,
    nextFireAt: isoOrNull(s.nextFireAt),
    lastFiredAt: isoOrNull(s.lastFiredAt),
    version: s.version,
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}
