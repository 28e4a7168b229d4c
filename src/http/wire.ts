// Domain objects -> JSON wire objects: camelCase fields as in the Job type,
// dates as ISO 8601 strings, ids and tokens as strings. Listing fields
// explicitly keeps internals off the wire; the client's types come from here.

import type { AttemptError, Job, StateCounts, WorkerInfo, EnqueueResult } from '../index.ts';
import type { JSONValue } from 'hono/utils/types';

const iso = (d: Date): string => d.toISOString();
const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * A failed attempt on the wire. The handler's stack is left out on purpose: an API
 * response never carries stack traces (they reveal paths and code); it stays in the row.
 */
export function toWireAttemptError(e: AttemptError) {
  return { attempt: e.attempt, token: e.token, kind: e.kind, name: e.name, message: e.message, at: e.at };
}

/** A job on the wire; a discriminated union on `state` like Job itself. */
export function toWireJob(job: Job) {
  const base = {
    id: job.id,
    tenantId: job.tenantId,
    queue: job.queue,
    jobType: job.jobType,
    payload: job.payload as JSONValue,
    priority: job.priority,
    runAt: iso(job.runAt),
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    idempotencyKey: job.idempotencyKey,
    replayCount: job.replayCount,
    errors: job.errors.map(toWireAttemptError),
    lastError: job.lastError ? toWireAttemptError(job.lastError) : null,
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
    startedAt: isoOrNull(job.startedAt),
  };
  switch (job.state) {
    case 'pending':
      return { ...base, state: job.state, lastToken: job.lastToken };
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

export type WireJob = ReturnType<typeof toWireJob>;

export function toWireResult(r: EnqueueResult) {
  return { created: r.created, job: toWireJob(r.job) };
}

export function toWireWorker(w: WorkerInfo) {
  return {
    id: w.id,
    hostname: w.hostname,
    pid: w.pid,
    queues: w.queues,
    inFlight: w.inFlight,
    startedAt: iso(w.startedAt),
    lastSeenAt: iso(w.lastSeenAt),
    alive: w.alive,
  };
}

export function toWireCounts(counts: StateCounts): StateCounts {
  return { ...counts };
}
