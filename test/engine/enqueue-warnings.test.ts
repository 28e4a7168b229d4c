// An enqueue that nothing can run yet is accepted (a worker or handler may be deployed
// later) and says so: a queue no live worker works, or a job type no live worker of its
// queue has a handler for. Counted on the enqueueWarning event.

import { describe, expect, it } from 'vitest';
import type { EngineEvents } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { row, useEngines } from './harness.ts';

const db = useTestDatabase();

describe('enqueue warnings', () => {
  const engines = useEngines(db);

  it('a queue no live worker works: stored as pending, with NO_WORKER_FOR_QUEUE', async () => {
    const producer = engines.producer();
    const events: Array<EngineEvents['enqueueWarning'][0]> = [];
    producer.events.on('enqueueWarning', (e) => events.push(e));
    const r = await producer.enqueue({ jobType: 'a', queue: 'nobody' });
    expect(r.created).toBe(true);
    expect(r.warnings).toEqual([expect.objectContaining({ code: 'NO_WORKER_FOR_QUEUE', queue: 'nobody', jobType: 'a' })]);
    expect(r.warnings[0]!.message).toContain('"nobody"');
    expect((await row(db, r.job.id)).state).toBe('pending');
    expect(events).toEqual([{ code: 'NO_WORKER_FOR_QUEUE', queue: 'nobody', jobType: 'a', count: 1 }]);
  });

  it('a job type no live worker of its queue handles: NO_HANDLER_FOR_JOB_TYPE; a handled one: none', async () => {
    await engines.start({ queues: { q: 1 }, pollIntervalMs: 600_000, handlers: { a: () => null } });
    // A worker of another queue knows 'b': that does not help queue q.
    await engines.start({ queues: { other: 1 }, pollIntervalMs: 600_000, handlers: { b: () => null } });
    const producer = engines.producer();
    const [known, unknown] = await producer.enqueueMany([
      { jobType: 'a', queue: 'q', delayMs: 600_000 },
      { jobType: 'b', queue: 'q', delayMs: 600_000 },
    ]);
    expect(known!.warnings).toEqual([]);
    expect(unknown!.warnings).toEqual([expect.objectContaining({ code: 'NO_HANDLER_FOR_JOB_TYPE', queue: 'q', jobType: 'b' })]);
    expect(unknown!.created).toBe(true);
  });

  it('once the only worker of a queue has stopped, a fresh producer warns again', async () => {
    const worker = await engines.start({ queues: { q: 1 }, pollIntervalMs: 600_000, handlers: { a: () => null } });
    expect((await engines.producer().enqueue({ jobType: 'a', queue: 'q', delayMs: 600_000 })).warnings).toEqual([]);
    await worker.stop();
    const after = await engines.producer().enqueue({ jobType: 'a', queue: 'q', delayMs: 600_000 });
    expect(after.warnings.map((w) => w.code)).toEqual(['NO_WORKER_FOR_QUEUE']);
  });
});
