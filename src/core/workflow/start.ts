// The start of a run by name: the options a start takes (validated; a debounce or throttle as a
// job's, never with an idempotency key), the run and driving job the store records for it, and
// whether its queue is woken. A start a window folded or dropped has nothing new to run, and a
// trailing debounce's run is due at its window's end (the queue's poll finds it), so neither wakes.

import { z } from 'zod';
import type { Queryable } from '../../driver/queryable.ts';
import type { WorkflowStore } from '../../driver/workflow-store.ts';
import type { EnqueueWindow } from '../../types/job.ts';
import type { StartRunResult } from '../../types/workflow.ts';
import { nameSchema } from '../config.ts';
import { DELAY_MS_MAX, debounceSchema, IDEMPOTENCY_KEY_MAX_CHARS, refineWindow, throttleSchema } from '../job-spec.ts';
import type { TraceCarrier } from '../tracing.ts';

export const WORKFLOW_JOB_TYPE_PREFIX = 'workflow:';
export const jobTypeOf = (name: string) => `${WORKFLOW_JOB_TYPE_PREFIX}${name}`;

const noNul = (s: string) => !s.includes('\u0000');
export const keySchema = z.string().min(1).max(IDEMPOTENCY_KEY_MAX_CHARS).refine(noNul, 'must not contain NUL bytes');
export const runTimeoutSchema = z.number().int().min(1).max(DELAY_MS_MAX);

/** StartRunOptions, validated. */
export const startSchema = z
  .object({
    tenantId: nameSchema.optional(),
    idempotencyKey: keySchema.optional(),
    runTimeoutMs: runTimeoutSchema.optional(),
    traceContext: z.custom<TraceCarrier>((v) => typeof v === 'object' && v !== null, 'must be { traceparent, tracestate? }').optional(),
    debounce: debounceSchema.optional(),
    throttle: throttleSchema.optional(),
  })
  .strict()
  // As for a job: not both, and not with an idempotency key (the key's lock decides what a start creates).
  .superRefine(refineWindow);

/** What a start records: the run of workflow `name` and its driving job on the target's queue. */
export interface StartParams {
  name: string;
  /** runTimeoutMs: the workflow's default (a cron ticker's target passes the one resolve answered). */
  target: { queue: string; maxAttempts: number; runTimeoutMs?: number | null };
  tenantId: string;
  input: string;
  idempotencyKey: string | null;
  /** Default: the workflow's own. */
  runTimeoutMs?: number | null;
  traceContext?: TraceCarrier | null;
  /** Debounce or throttle by key (docs/debounce.md); not with an idempotency key. */
  window?: EnqueueWindow;
}

/** Records the run on `client` (a transaction the caller holds) or in a transaction of its own. */
export function recordStart(store: WorkflowStore, client: Queryable | undefined, p: StartParams): Promise<StartRunResult> {
  return store.workflowStartRun(
    {
      name: p.name,
      tenantId: p.tenantId,
      input: p.input,
      idempotencyKey: p.idempotencyKey,
      queue: p.target.queue,
      jobType: jobTypeOf(p.name),
      maxAttempts: p.target.maxAttempts,
      runTimeoutMs: p.runTimeoutMs === undefined ? (p.target.runTimeoutMs ?? null) : p.runTimeoutMs,
      traceContext: p.traceContext ?? null,
      ...(p.window ? { window: p.window } : {}),
    },
    client,
  );
}

/** Whether a start's answer `res` made a run due now, whose queue is to be woken. */
export function wakesQueue(res: StartRunResult, window: EnqueueWindow | undefined): boolean {
  const trailing = window?.kind === 'debounce' && window.mode === 'trailing';
  return !res.duplicate && !res.collapsedBy && !trailing;
}
