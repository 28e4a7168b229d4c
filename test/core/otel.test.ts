// Tracing with @opentelemetry/api installed but no SDK registered, as in most applications:
// a job enqueued outside any trace gets no span at all (the handler is called as is), and one
// with a producer context still gets a span that carries it to the handler's downstream calls;
// a workflow step gets none (nothing would record it).

import { describe, expect, it } from 'vitest';
import { otelTracing } from '../../src/otel.ts';
import type { LeasedJob } from '../../src/types/job.ts';

const job = (trace: LeasedJob['trace']): LeasedJob =>
  ({ id: '1', tenantId: 'default', queue: 'q', jobType: 't', attempt: 1, trace }) as LeasedJob;

describe('otelTracing without an SDK', () => {
  const tracing = otelTracing('0.0.0')!;

  it('is on (the API is installed) and captures nothing outside a span', () => {
    expect(tracing).not.toBeNull();
    expect(tracing.capture()).toBeNull();
  });

  it('starts no span for a job enqueued outside any trace', () => {
    expect(tracing.startJob(job(null))).toBeNull();
  });

  it('starts no span for a workflow step, in a traced job or not', () => {
    const info = { workflow: 'w', runId: '1', step: 's', attempt: 1 };
    expect(tracing.startStep(info)).toBeNull();
    const span = tracing.startJob(job({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }));
    expect(span!.run(() => tracing.startStep(info))).toBeNull();
    span!.end('succeeded');
  });

  it("still runs the handler of a traced job in a span carrying its producer's context", () => {
    const span = tracing.startJob(job({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }));
    expect(span).not.toBeNull();
    expect(span!.run(() => 42)).toBe(42);
    span!.end('succeeded');
  });
});
