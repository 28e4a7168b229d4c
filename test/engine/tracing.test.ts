// OpenTelemetry end to end with the SDK's in-memory exporter: the producer's active context
// is stored with the job at enqueue (or taken from an HTTP traceparent header), and each
// attempt's handler runs in a CONSUMER span that is a child of the producer's span and links
// to it, on every retry, in whichever engine claims it, with the job's attributes and outcome.

import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { useInMemoryTracing } from '../helpers/otel.ts';
import { waitFor } from '../helpers/wait.ts';
import { startApi } from '../http/harness.ts';
import { rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();
const exporter = useInMemoryTracing();

const tracer = () => trace.getTracer('test');
const jobSpans = (id: string): ReadableSpan[] =>
  exporter
    .getFinishedSpans()
    .filter((s) => s.attributes['baton.job.id'] === id)
    .sort((a, b) => Number(a.attributes['baton.job.attempt']) - Number(b.attributes['baton.job.attempt']));
const traceContextOf = async (id: string) =>
  (await db.query<{ trace_context: unknown }>('SELECT trace_context FROM baton.jobs WHERE id = $1', [id])).rows[0]!.trace_context;

describe('tracing through @opentelemetry/api', () => {
  const engines = useEngines(db, () => ({ backoffBaseMs: 1, backoffCapMs: 5, pollIntervalMs: 100 }));

  it("the handler runs in a consumer span, child of the producer's span and linked to it, in another engine", async () => {
    const seen: Array<{ traceId: string; spanId: string }> = [];
    await engines.start({
      queues: { q: 2 },
      handlers: {
        work: () => {
          const active = trace.getActiveSpan()!.spanContext();
          seen.push({ traceId: active.traceId, spanId: active.spanId });
          tracer().startSpan('inside the handler').end();
          return { ok: true };
        },
      },
    });
    const producer = engines.producer();
    const { id, produced } = await tracer().startActiveSpan('produce', async (span) => {
      const r = await producer.enqueue({ jobType: 'work', queue: 'q', payload: { n: 1 } });
      span.end();
      return { id: r.job.id, produced: span.spanContext() };
    });
    expect(await traceContextOf(id)).toEqual({ traceparent: `00-${produced.traceId}-${produced.spanId}-01` });
    await rowInState(db, id, 'succeeded');
    const [consumer] = await waitFor(() => (jobSpans(id).length === 1 ? jobSpans(id) : null));

    expect(consumer!.name).toBe('process work');
    expect(consumer!.kind).toBe(SpanKind.CONSUMER);
    expect(consumer!.spanContext().traceId).toBe(produced.traceId);
    expect(consumer!.parentSpanContext?.spanId).toBe(produced.spanId);
    expect(consumer!.links.map((l) => l.context.spanId)).toEqual([produced.spanId]);
    expect(consumer!.attributes).toMatchObject({
      'baton.job.id': id,
      'baton.job.type': 'work',
      'baton.job.queue': 'q',
      'baton.job.tenant': 'default',
      'baton.job.attempt': 1,
      'baton.job.outcome': 'succeeded',
      'messaging.destination.name': 'q',
    });
    expect(consumer!.status.code).not.toBe(SpanStatusCode.ERROR);
    // The handler's active span is the consumer span, so its own spans are children of it.
    expect(seen).toEqual([{ traceId: produced.traceId, spanId: consumer!.spanContext().spanId }]);
    const inner = exporter.getFinishedSpans().find((s) => s.name === 'inside the handler')!;
    expect(inner.parentSpanContext?.spanId).toBe(consumer!.spanContext().spanId);
  });

  it("every attempt gets its own span in the producer's trace; failures record the error and end as retried or dead-lettered", async () => {
    let calls = 0;
    await engines.start({
      queues: { q: 1 },
      handlers: {
        flaky: () => {
          calls += 1;
          if (calls < 3) throw new Error(`attempt ${calls} failed`);
          return null;
        },
        doomed: () => {
          throw new TerminalError('never');
        },
      },
    });
    const producer = engines.producer();
    const { flaky, doomed, produced } = await tracer().startActiveSpan('produce', async (span) => {
      const [a, b] = await producer.enqueueMany([
        { jobType: 'flaky', queue: 'q', maxAttempts: 5 },
        { jobType: 'doomed', queue: 'q', maxAttempts: 5 },
      ]);
      span.end();
      return { flaky: a!.job.id, doomed: b!.job.id, produced: span.spanContext() };
    });
    await rowInState(db, flaky, 'succeeded');
    await rowInState(db, doomed, 'dead_lettered');
    const spans = await waitFor(() => (jobSpans(flaky).length === 3 ? jobSpans(flaky) : null));

    expect(spans.map((s) => [s.attributes['baton.job.attempt'], s.attributes['baton.job.outcome'], s.status.code])).toEqual([
      [1, 'retried', SpanStatusCode.ERROR],
      [2, 'retried', SpanStatusCode.ERROR],
      [3, 'succeeded', SpanStatusCode.UNSET],
    ]);
    for (const s of spans) {
      expect(s.spanContext().traceId).toBe(produced.traceId);
      expect(s.parentSpanContext?.spanId).toBe(produced.spanId);
    }
    expect(spans[0]!.events.find((e) => e.name === 'exception')?.attributes?.['exception.message']).toBe('attempt 1 failed');
    const [dead] = await waitFor(() => (jobSpans(doomed).length === 1 ? jobSpans(doomed) : null));
    expect(dead!.attributes['baton.job.outcome']).toBe('dead_lettered');
    expect(dead!.spanContext().traceId).toBe(produced.traceId);
  });

  it('with no active span at enqueue, nothing is stored and the attempt is a root span without links', async () => {
    await engines.start({ queues: { q: 1 }, handlers: { work: () => null } });
    const { job } = await engines.producer().enqueue({ jobType: 'work', queue: 'q' });
    expect(await traceContextOf(job.id)).toBeNull();
    await rowInState(db, job.id, 'succeeded');
    const [span] = await waitFor(() => (jobSpans(job.id).length === 1 ? jobSpans(job.id) : null));
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.links).toEqual([]);
  });

  it('an explicit traceContext wins over the active one; tracing: false stores and starts nothing', async () => {
    const given = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=1' };
    const traced = await tracer().startActiveSpan('produce', async (span) => {
      const r = await engines.producer().enqueue({ jobType: 'none', queue: 'q' }, { traceContext: given });
      span.end();
      return r.job;
    });
    expect(traced.trace).toEqual(given);
    expect(await traceContextOf(traced.id)).toEqual(given);
    await expect(
      engines.producer().enqueue({ jobType: 'none', queue: 'q' }, { traceContext: { traceparent: 'nope' } }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });

    await engines.start({ tracing: false, queues: { off: 1 }, handlers: { work: () => null } });
    const untraced = await tracer().startActiveSpan('produce', async (span) => {
      const r = await engines.producer({ tracing: false }).enqueue({ jobType: 'work', queue: 'off' });
      span.end();
      return r.job;
    });
    expect(await traceContextOf(untraced.id)).toBeNull();
    await rowInState(db, untraced.id, 'succeeded');
    expect(jobSpans(untraced.id)).toEqual([]);
  });

  it("over HTTP, the request's traceparent is stored with the job and shown on the wire; an invalid one is ignored", async () => {
    const api = await startApi(db);
    try {
      const post = (headers: Record<string, string>) =>
        api.raw('/api/jobs', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ jobType: 't' }),
        });
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const ok = await post({ traceparent, tracestate: 'congo=t61rcWkgMzE' });
      expect(ok.status).toBe(201);
      const job = (await ok.json()) as { id: string; trace: unknown };
      expect(job.trace).toEqual({ traceparent, tracestate: 'congo=t61rcWkgMzE' });
      expect(await traceContextOf(job.id)).toEqual({ traceparent, tracestate: 'congo=t61rcWkgMzE' });
      const read = (await (await api.raw(`/api/jobs/${job.id}`)).json()) as { trace: unknown };
      expect(read.trace).toEqual({ traceparent, tracestate: 'congo=t61rcWkgMzE' });

      const bad = await post({ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' });
      expect(bad.status).toBe(201);
      const badJob = (await bad.json()) as { id: string; trace: unknown };
      expect(badJob.trace).toBeNull();
      expect(await traceContextOf(badJob.id)).toBeNull();
    } finally {
      await api.close();
    }
  });
});
