// The tracing seam: the engine captures the producer's trace context at enqueue and runs
// each handler in a span that continues it, and each workflow step it executes (not one answered
// from the run's history) in a span under the active one. The engine knows nothing of OpenTelemetry;
// src/otel.ts implements this over @opentelemetry/api when that is installed. Without it
// every call here is a no-op that costs next to nothing per job.

import type { LeasedJob } from '../types/job.ts';
import type { TraceCarrier } from '../types/trace.ts';

export type { TraceCarrier } from '../types/trace.ts';

/** How a job's handler ended, as its span records it. */
export type JobSpanOutcome = 'succeeded' | 'retried' | 'dead_lettered' | 'cancelled' | 'released' | 'fenced' | 'lease_lost' | 'error';

/** The span one attempt of one job runs in. */
export interface JobSpan {
  /** Runs `fn` with this span active (the handler's own spans become its children). */
  run<T>(fn: () => T): T;
  /** Ends the span with the attempt's outcome; `error` is what the handler threw, if it did. Once. */
  end(outcome: JobSpanOutcome, error?: unknown): void;
}

/** One execution of a workflow step, as its span records it. */
export interface StepSpanInfo {
  workflow: string;
  runId: string;
  /** The step's key as the run's history shows it (`name`, or `name#2` for its second occurrence). */
  step: string;
  attempt: number;
}

/** The span one execution of one workflow step runs in. */
export interface StepSpan {
  /** Runs `fn` with this span active (the step's own spans and calls become its children). */
  run<T>(fn: () => T): T;
  /** Ends the span: `ok`, or `error` with what the step threw. Once. */
  end(outcome: 'ok' | 'error', error?: unknown): void;
}

export interface Tracing {
  /** The active trace context as a carrier, or null when there is none (or it is not sampled in). */
  capture(): TraceCarrier | null;
  /** The span for one attempt of `job`, continuing the trace its producer was in; null: no tracing. */
  startJob(job: LeasedJob): JobSpan | null;
  /** The span of one step execution, a child of the active span (its execution's); null: nothing would record it. */
  startStep(step: StepSpanInfo): StepSpan | null;
}

export const noTracing: Tracing = {
  capture: () => null,
  startJob: () => null,
  startStep: () => null,
};

const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * A carrier from `traceparent` / `tracestate` header values, or null when the traceparent is
 * not a valid version-00 one (the W3C rule: an invalid traceparent is ignored, not an error).
 */
export function traceCarrier(traceparent: string | undefined | null, tracestate?: string | null): TraceCarrier | null {
  const tp = traceparent?.trim().toLowerCase();
  if (!tp || !TRACEPARENT.test(tp)) return null;
  const ts = tracestate?.trim();
  return ts ? { traceparent: tp, tracestate: ts.slice(0, 512) } : { traceparent: tp };
}
