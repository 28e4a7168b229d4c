// Drift guards: request schemas vs JobSpec / ListJobsFilter, and Job vs its
// wire form (same keys per state, checked by the compiler and at run time),
// dates as ISO strings, each attempt's stack on the full job (listings: see
// listing-bounds.test.ts). No database needed.

import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { createClient, InferResponseType } from '../../src/client/index.ts';
import type { jobSpecSchema, listJobsQuerySchema } from '../../src/http/jobs/schemas.ts';
import {
  toWireAttemptError,
  type toWireBulkItem,
  type toWireCounts,
  toWireJob,
  type toWireQueue,
  type toWireStats,
  type toWireWorker,
  type WireJob,
  type WireJobSummary,
} from '../../src/http/wire.ts';
import type {
  wireAttemptErrorSchema,
  wireBulkItemSchema,
  wireJobSchema,
  wireJobSummarySchema,
  wireQueueSchema,
  wireStateCountsSchema,
  wireStatsSchema,
  wireWorkerSchema,
} from '../../src/http/wire-schemas.ts';
import type { AttemptError, Job, JobSpec, ListJobsFilter } from '../../src/index.ts';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type JobOf<S> = Extract<Job, { state: S }>;
type WireOf<S> = Extract<WireJob, { state: S }>;

// Compile-time: each state's wire object has exactly the domain object's keys.
const sameKeys: {
  pending: Same<keyof WireOf<'pending'>, keyof JobOf<'pending'>>;
  waiting: Same<keyof WireOf<'waiting'>, keyof JobOf<'waiting'>>;
  live: Same<keyof WireOf<'leased' | 'running'>, keyof JobOf<'leased' | 'running'>>;
  succeeded: Same<keyof WireOf<'succeeded'>, keyof JobOf<'succeeded'>>;
  dead: Same<keyof WireOf<'dead_lettered'>, keyof JobOf<'dead_lettered'>>;
  cancelled: Same<keyof WireOf<'cancelled'>, keyof JobOf<'cancelled'>>;
  errors: Same<keyof WireJob['errors'][number], keyof AttemptError>;
  // What the typed client returns for GET /api/jobs/:id is the wire job.
  // The HTTP contracts accept exactly the library's fields (a new JobSpec field must reach the API).
  spec: Same<keyof z.output<typeof jobSpecSchema>, keyof JobSpec>;
  filter: Same<keyof z.output<typeof listJobsQuerySchema>, keyof ListJobsFilter>;
  client: Same<InferResponseType<ReturnType<typeof createClient>['api']['jobs'][':id']['$get'], 200>['state'], WireJob['state']>;
} = {
  pending: true,
  waiting: true,
  live: true,
  succeeded: true,
  dead: true,
  cancelled: true,
  errors: true,
  spec: true,
  filter: true,
  client: true,
};

// Compile-time: the response schemas (wire-schemas.ts, which the OpenAPI document is made of) type
// exactly what the wire functions return; payload and result are any JSON (unknown) in the schemas.
type NoJson<T> = T extends unknown ? Omit<T, 'payload' | 'result'> : never;
const schemasMatchWire: {
  job: Same<NoJson<z.output<typeof wireJobSchema>>, NoJson<WireJob>>;
  summary: Same<NoJson<z.output<typeof wireJobSummarySchema>>, NoJson<WireJobSummary>>;
  attemptError: Same<z.output<typeof wireAttemptErrorSchema>, ReturnType<typeof toWireAttemptError>>;
  counts: Same<z.output<typeof wireStateCountsSchema>, ReturnType<typeof toWireCounts>>;
  worker: Same<z.output<typeof wireWorkerSchema>, ReturnType<typeof toWireWorker>>;
  queue: Same<z.output<typeof wireQueueSchema>, ReturnType<typeof toWireQueue>>;
  stats: Same<z.output<typeof wireStatsSchema>, ReturnType<typeof toWireStats>>;
  bulkItem: Same<z.output<typeof wireBulkItemSchema>, ReturnType<typeof toWireBulkItem>>;
} = { job: true, summary: true, attemptError: true, counts: true, worker: true, queue: true, stats: true, bulkItem: true };

const t = new Date('2030-01-02T03:04:05.678Z');
const attemptError: AttemptError = {
  attempt: 1,
  token: '7',
  kind: 'transient',
  name: 'Error',
  message: 'boom',
  stack: 'Error: boom\n    at handler (/app/h.ts:1:2)',
  at: t.toISOString(),
};
const base = {
  id: '42',
  tenantId: 'default',
  queue: 'q',
  jobType: 'noop',
  payload: { a: 1 },
  priority: 0,
  runAt: t,
  attempt: 1,
  maxAttempts: 5,
  idempotencyKey: null,
  replayCount: 0,
  errors: [attemptError],
  lastError: attemptError,
  createdAt: t,
  updatedAt: t,
  startedAt: t,
  trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  cancelRequestedAt: null,
};
const jobs: Job[] = [
  { ...base, state: 'pending', lastToken: null },
  { ...base, state: 'leased', token: '8', leaseOwner: 'w', leaseExpiresAt: t },
  { ...base, state: 'running', token: '8', leaseOwner: 'w', leaseExpiresAt: t },
  { ...base, state: 'succeeded', token: '8', result: [1], finishedAt: t },
  { ...base, state: 'dead_lettered', lastToken: '8', reason: 'terminal', finishedAt: t },
  { ...base, state: 'cancelled', lastToken: null, finishedAt: t },
];

describe('toWireAttemptError', () => {
  it('gives the time as the other wire times are, whatever zone PostgreSQL wrote it in', () => {
    expect(toWireAttemptError({ ...attemptError, at: '2030-01-02T05:04:05.678912+02:00' }).at).toBe('2030-01-02T03:04:05.678Z');
    expect(toWireAttemptError({ ...attemptError, at: 'not a time' }).at).toBe('not a time');
  });
});

describe('toWireJob', () => {
  it.each(jobs.map((j) => [j.state, j] as const))('%s: same keys, ISO dates, stacks kept', (_state, job) => {
    expect(Object.values({ ...sameKeys, ...schemasMatchWire }).every(Boolean)).toBe(true);
    const wire = toWireJob(job);
    expect(Object.keys(wire).sort()).toEqual(Object.keys(job).sort());
    expect(wire.runAt).toBe('2030-01-02T03:04:05.678Z');
    expect(wire.createdAt).toBe(t.toISOString());
    const text = JSON.stringify(wire);
    expect(wire.lastError).toEqual({
      attempt: 1,
      token: '7',
      kind: 'transient',
      name: 'Error',
      message: 'boom',
      stack: attemptError.stack,
      at: t.toISOString(),
    });
    // The wire object survives JSON unchanged (no Dates or bigints left in it).
    expect(JSON.parse(text)).toEqual(wire);
  });
});
