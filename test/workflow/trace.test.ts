// Trace context through workflow runs, with the OpenTelemetry SDK's in-memory exporter: a run
// started inside a span stores it with its driving job, and every execution of the run (before
// and after a sleep, after an event, after a replay that needed a new driving job) runs in a span
// that is a child of the producer's; each step executed runs in a span of its own under its
// execution's (none for a step answered from history), with its attempt and outcome; a child run
// continues the span of the step that started it; a run started over HTTP stores the caller's
// traceparent header, and its runTimeoutMs sets its deadline.

import { type SpanContext, SpanStatusCode, trace } from '@opentelemetry/api';
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
const stepSpans = (runId: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((s) => s.attributes['baton.workflow.run_id'] === runId);
const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

describe('trace context through workflow runs', () => {
  const engines = useWorkflowEngines(db);

  it("every execution of a run is a child span of the producer's, on both sides of a sleep, and its steps run in spans inside it", async () => {
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
    // Each step ran in its own span (the active one inside it), a child of one execution's span.
    const executionIds = new Set(executions.map((s) => s.spanContext().spanId));
    const steps = stepSpans(run.id);
    expect(steps.map((s) => s.name).sort()).toEqual(['step after', 'step before']);
    for (const s of inSteps) {
      const span = steps.find((x) => x.name === `step ${s.step}`)!;
      expect(s.traceId).toBe(produced.traceId);
      expect(s.spanId).toBe(span.spanContext().spanId);
      expect(executionIds.has(parentOf(span)!)).toBe(true);
    }
  });

  it('a step executed gets a span with its attempt and outcome; a step answered from history gets none', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    let fail = true;
    baton.workflow('flaky', async (ctx) => {
      await ctx.step('a', () => 1);
      return ctx.step('b', () => {
        if (fail) {
          fail = false;
          throw new Error('flaky b');
        }
        return 2;
      });
    });
    await baton.start();
    const { run, produced } = await tracer().startActiveSpan('produce', async (span) => {
      const r = await baton.startWorkflow('flaky');
      span.end();
      return { run: r.run, produced: span.spanContext() };
    });
    expect((await runInState(baton, run.id, 'succeeded')).output).toBe(2);
    const executions = await waitFor(() => (spansOfJob(run.jobId!).length === 2 ? spansOfJob(run.jobId!) : null), {
      message: 'two execution spans',
    });
    const [first, second] = [...executions].sort(
      (x, y) => Number(x.attributes['baton.job.attempt']) - Number(y.attributes['baton.job.attempt']),
    );
    const steps = stepSpans(run.id).map((s) => ({
      name: s.name,
      step: s.attributes['baton.workflow.step'],
      workflow: s.attributes['baton.workflow.name'],
      attempt: s.attributes['baton.workflow.step.attempt'],
      outcome: s.attributes['baton.workflow.step.outcome'],
      error: s.status.code === SpanStatusCode.ERROR ? s.status.message : null,
      traceId: s.spanContext().traceId,
      parent: parentOf(s),
    }));
    // The retry answered "a" from the history: no second span for it.
    const base = { workflow: 'flaky', traceId: produced.traceId };
    expect(steps).toEqual([
      { ...base, name: 'step a', step: 'a', attempt: 1, outcome: 'ok', error: null, parent: first!.spanContext().spanId },
      { ...base, name: 'step b', step: 'b', attempt: 1, outcome: 'error', error: 'flaky b', parent: first!.spanContext().spanId },
      { ...base, name: 'step b', step: 'b', attempt: 2, outcome: 'ok', error: null, parent: second!.spanContext().spanId },
    ]);
  });

  it("after an event wait, the run's next execution is still in the trace it was started with", async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('evented', async (ctx) => {
      await ctx.step('before', () => 1);
      const go = await ctx.waitForEvent<string>('go', 'go');
      return ctx.step('after', () => go?.payload);
    });
    await baton.start();
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const { run } = await baton.startWorkflow('evented', null, { traceContext: { traceparent } });
    await runInState(baton, run.id, 'waiting');
    await baton.sendEvent(run.id, 'go', 'went');
    expect((await runInState(baton, run.id, 'succeeded')).output).toBe('went');
    const executions = await waitFor(() => (spansOfJob(run.jobId!).length === 2 ? spansOfJob(run.jobId!) : null), {
      message: 'two execution spans',
    });
    for (const s of [...executions, ...stepSpans(run.id)]) expect(s.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    for (const s of executions) expect(parentOf(s)).toBe('00f067aa0ba902b7');
  });

  it('a blocked run replayed after retention removed its driving job: the new job carries the trace it was started with', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    let renamed = false;
    baton.workflow('drifting', async (ctx) => {
      await ctx.step(renamed ? 'charge-card' : 'charge', () => 'charged');
      await ctx.waitForEvent('go', 'go');
      return ctx.step('ship', () => 'shipped');
    });
    await baton.start();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { run } = await baton.startWorkflow('drifting', null, { traceContext: { traceparent, tracestate: 'k=v' } });
    await runInState(baton, run.id, 'waiting');
    renamed = true;
    await baton.sendEvent(run.id, 'go');
    const blocked = await runInState(baton, run.id, 'blocked');
    expect(Object.keys(blocked.blockedReason!).sort()).toEqual(['code', 'message', 'steps']);
    await waitFor(async () => (await jobOf(db, run.id)).state === 'succeeded', { message: 'the driving job to complete' });
    // Retention deletes the driving job; the blocked run stays.
    await db.query('DELETE FROM baton.jobs WHERE id = $1', [run.jobId]);
    renamed = false;
    const replayed = await baton.workflows.replayRun(run.id);
    expect(replayed.jobId).not.toBe(run.jobId);
    expect(await traceContextOf(replayed.jobId!)).toEqual({ traceparent, tracestate: 'k=v' });
    expect((await runInState(baton, run.id, 'succeeded')).output).toBe('shipped');
    const [execution] = await waitFor(() => (spansOfJob(replayed.jobId!).length === 1 ? spansOfJob(replayed.jobId!) : null), {
      message: "the replay's execution span",
    });
    expect(execution!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(parentOf(execution!)).toBe('b7ad6b7169203331');
  });

  it("a child run's executions continue the span of the step that started it, in its parent's execution", async () => {
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
    const starter = stepSpans(run.id).find((s) => s.name === 'step kids')!;
    expect(parentOf(childSpans[0]!)).toBe(starter.spanContext().spanId);
    expect(parentSpans.map((s) => s.spanContext().spanId)).toContain(parentOf(starter));
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
