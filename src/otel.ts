// Tracing over OpenTelemetry's API (an optional peer dependency): the producer's active span
// context is written as a W3C traceparent at enqueue, and each attempt's handler runs in a
// CONSUMER span that is a child of it (so it shows in the producer's trace, attempt after
// attempt) and links to it, with the job's id, type, queue, attempt and outcome as attributes.
// Each workflow step executed (not answered from history) gets an INTERNAL span under it.
// The SDK, exporters and propagators stay the application's: Baton only uses the API.

import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';
import type { JobSpan, JobSpanOutcome, StepSpan, StepSpanInfo, TraceCarrier, Tracing } from './core/tracing.ts';
import { traceCarrier } from './core/tracing.ts';
import type { LeasedJob } from './types/job.ts';

/** The API when the application has it installed, else null (tracing is then off). */
function loadApi(): typeof Api | null {
  try {
    return createRequire(import.meta.url)('@opentelemetry/api') as typeof Api;
  } catch {
    return null;
  }
}

/** Tracing over @opentelemetry/api, or null when it is not installed. */
export function otelTracing(version: string): Tracing | null {
  const api = loadApi();
  if (!api) return null;
  const tracer = api.trace.getTracer('baton-queue', version);
  // The global provider is a proxy whose delegate is the API's shared no-op provider until an
  // SDK registers (which may happen after createBaton, so this is asked per job).
  const noopProvider = new api.ProxyTracerProvider().getDelegate();
  const noSdk = (): boolean => {
    const provider = api.trace.getTracerProvider();
    return provider instanceof api.ProxyTracerProvider && provider.getDelegate() === noopProvider;
  };

  const remoteContext = (carrier: TraceCarrier): Api.SpanContext | null => {
    const [, traceId, spanId, flags] = carrier.traceparent.split('-');
    if (!traceId || !spanId || !flags) return null;
    const sc: Api.SpanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & 1, isRemote: true };
    if (carrier.tracestate) sc.traceState = api.createTraceState(carrier.tracestate);
    return api.trace.isSpanContextValid(sc) ? sc : null;
  };

  /** A failed attempt or step: the exception recorded and the span's status an error. */
  const recordError = (span: Api.Span, error: unknown): void => {
    span.recordException(error instanceof Error ? error : new Error(String(error)));
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  };

  /** A started span as the engine holds it: `run` inside its context, `end` once with an outcome. */
  const spanHandle = <O extends string>(span: Api.Span, parent: Api.Context, outcomeKey: string) => {
    const active = api.trace.setSpan(parent, span);
    let ended = false;
    return {
      run: <T>(fn: () => T): T => api.context.with(active, fn),
      end(outcome: O, error?: unknown) {
        if (ended) return;
        ended = true;
        if (span.isRecording()) {
          span.setAttribute(outcomeKey, outcome);
          if (error !== undefined) recordError(span, error);
        }
        span.end();
      },
    };
  };

  return {
    capture() {
      const sc = api.trace.getSpanContext(api.context.active());
      if (!sc || !api.trace.isSpanContextValid(sc)) return null;
      const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0');
      return traceCarrier(`00-${sc.traceId}-${sc.spanId}-${flags}`, sc.traceState?.serialize());
    },

    startJob(job: LeasedJob): JobSpan | null {
      // No SDK registered and no producer context: nothing to record and nothing to carry into
      // the handler. The common case for applications without tracing set up, so it is
      // decided before anything is allocated.
      if (!job.trace && noSdk()) return null;
      const producer = job.trace ? remoteContext(job.trace) : null;
      const parent = producer ? api.trace.setSpanContext(api.ROOT_CONTEXT, producer) : api.ROOT_CONTEXT;
      const span = tracer.startSpan(
        `process ${job.jobType}`,
        { kind: api.SpanKind.CONSUMER, ...(producer ? { links: [{ context: producer }] } : {}) },
        parent,
      );
      // A tracer that is a no-op under another provider: the same, found after the fact.
      if (!producer && !span.isRecording() && !api.trace.isSpanContextValid(span.spanContext())) return null;
      // Attributes only for a span that records them (set right after the start, so a sampler
      // decides on the name, kind and links).
      if (span.isRecording()) {
        span.setAttributes({
          'messaging.system': 'baton',
          'messaging.operation.type': 'process',
          'messaging.destination.name': job.queue,
          'messaging.message.id': job.id,
          'baton.job.id': job.id,
          'baton.job.type': job.jobType,
          'baton.job.queue': job.queue,
          'baton.job.tenant': job.tenantId,
          'baton.job.attempt': job.attempt,
        });
      }
      return spanHandle<JobSpanOutcome>(span, parent, 'baton.job.outcome');
    },

    startStep(step: StepSpanInfo): StepSpan | null {
      // Without an SDK a step span records nothing, and the execution's span (if any) already
      // carries the trace to the step's calls: nothing is allocated.
      if (noSdk()) return null;
      const parent = api.context.active();
      const span = tracer.startSpan(`step ${step.step}`, { kind: api.SpanKind.INTERNAL }, parent);
      // Sampled out: the step's calls keep the execution's context, as without a step span.
      if (!span.isRecording()) {
        span.end();
        return null;
      }
      span.setAttributes({
        'baton.workflow.name': step.workflow,
        'baton.workflow.run_id': step.runId,
        'baton.workflow.step': step.step,
        'baton.workflow.step.attempt': step.attempt,
      });
      return spanHandle<'ok' | 'error'>(span, parent, 'baton.workflow.step.outcome');
    },
  };
}
