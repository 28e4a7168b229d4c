// Trace context through workflow runs, with the OpenTelemetry SDK's in-memory exporter: a run
// started inside a span stores it with its driving job, and every execution of the run (before
// and after a sleep) runs in a span that is a child of the producer's, with the steps inside it;
// a child run continues its parent's execution; a run started over HTTP stores the caller's
// traceparent header, and its runTimeoutMs sets its deadline.

import { type SpanContext, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { useInMemoryTracing } from '../helpers/otel.ts';
import { waitFor } from '../helpers/wait.ts';
import { okJson, startApi } from '../http/harness.ts';
import { jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();
const exporter = useInMemoryTracing();

const tracer = () => trace.getTracer('test');
const spansOfJob = (id: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.attributes['baton.job.id'] === id);
const traceContextOf = async (jobId: string) =>
  (await db.query<{ trace_context: unknown }>('SELECT trace_context FROM baton.jobs WHERE id = $1', [jobId])).rows[0]?.trace_context;
const active = (): SpanContext => trace.getActiveSpan()!.spanContext();

describe('trace context through workflow runs', () => {
  const engines = useWorkflowEngines(db);

  it("every execution of a run is a child span of the producer's, on both sides of a sleep, and its steps run inside it", async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const inSteps: Array<{ step: string; traceId: string; spanId: string }> = [];
    baton.workflow('traced', async (ctx) => {
      await ctx.step('before', () => inSteps.push({ step: 'before', ...active() }));
      await ctx.sleep('nap', 50);
      await ctx.step('after', () => inSteps.push({ step: 'after', ...active() }));
    });
    await baton.start();
    const { run, produced } = await tracer().startActiveSpan('produce', async (span) => {
      const r = await baton.startWorkflow('traced');
      span.end();
      return { run: r.run, produced: span.spanContext() };
    });
    await runInState(baton, run.id, 'succeeded');
    expect(await traceContextOf(run.jobId!)).toEqual({ traceparent: `00-${produced.traceId}-${produced.spanId}-01` });
    const executions = await waitFor(() => (spansOfJob(run.jobId!).length === 2 ? spansOfJob(run.jobId!) : null), {
      message: 'two execution spans',
    });
    for (const s of executions) {
      expect(s.spanContext().traceId).toBe(produced.traceId);
      expect(s.parentSpanContext?.spanId).toBe(produced.spanId);
    }
    expect(inSteps.map((s) => s.step)).toEqual(['before', 'after']);
    const executionIds = new Set(executions.map((s) => s.spanContext().spanId));
    for (const s of inSteps) {
      expect(s.traceId).toBe(produced.traceId);
      expect(executionIds.has(s.spanId)).toBe(true);
    }
  });

  it("a child run's executions continue its parent's execution span", async () => {
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow('kid', (ctx) => ctx.step('k', () => 1));
    baton.workflow('mum', (ctx) => ctx.all('kids', [{ workflow: 'kid' }]));
    await baton.start();
    const { run, produced } = await tracer().startActiveSpan('produce', async (span) => {
      const r = await baton.startWorkflow('mum');
      span.end();
      return { run: r.run, produced: span.spanContext() };
    });
    const done = await runInState(baton, run.id, 'succeeded');
    const childId = (done.output as Array<{ runId: string }>)[0]!.runId;
    const child = await jobOf(db, childId);
    const parentSpans = spansOfJob(run.jobId!);
    const childSpans = await waitFor(() => (spansOfJob(child.id).length > 0 ? spansOfJob(child.id) : null));
    expect(childSpans[0]!.spanContext().traceId).toBe(produced.traceId);
    expect(parentSpans.map((s) => s.spanContext().spanId)).toContain(childSpans[0]!.parentSpanContext?.spanId);
  });

  it("over HTTP, the caller's traceparent is stored with the run's driving job and runTimeoutMs sets its deadline", async () => {
    const api = await startApi(db);
    try {
      api.baton.workflow('remote', (ctx) => ctx.waitForEvent('w', 'go'));
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      // Through the typed client users get: runTimeoutMs is in its body type, the trace headers go as request headers.
      const runs = api.client.api.workflows[':name'].runs;
      const { run } = await okJson(
        runs.$post(
          { param: { name: 'remote' }, json: { input: null, runTimeoutMs: 60_000 } },
          { headers: { traceparent, tracestate: 'congo=t61rcWkgMzE' } },
        ),
        201,
      );
      expect(Date.parse(run.deadlineAt!) - Date.parse(run.createdAt)).toBe(60_000);
      expect(await traceContextOf(run.jobId!)).toEqual({ traceparent, tracestate: 'congo=t61rcWkgMzE' });
      const bad = await runs.$post({ param: { name: 'remote' }, json: { runTimeoutMs: 0 } });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('INVALID_ARGUMENT');
      // A malformed traceparent is ignored (the W3C rule), not refused.
      const ignored = await okJson(
        runs.$post({ param: { name: 'remote' }, json: {} }, { headers: { traceparent: 'not-a-traceparent' } }),
        201,
      );
      expect(await traceContextOf(ignored.run.jobId!)).toBeNull();
    } finally {
      await api.close();
    }
  });
});
