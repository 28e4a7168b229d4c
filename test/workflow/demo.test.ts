// The daemon's demo workflow place-order on a real database: it reserves, charges,
// waits for `shipped` and notifies; without the event it finishes at its timeout.

import { describe, expect, it } from 'vitest';
import { placeOrder } from '../../src/daemon/demo-handlers.ts';
import type { WorkflowFn } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

describe('demo workflow place-order', () => {
  const engines = useWorkflowEngines(db);

  it('waits for shipped and finishes with it, or finishes unshipped at its timeout', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow('place-order', placeOrder as WorkflowFn);
    await baton.start();
    const { run } = await baton.startWorkflow('place-order', { sku: 'A1', amount: 5, shipWithinMs: 60_000 });
    const waiting = await runInState(baton, run.id, 'waiting');
    expect(waiting.waitEvent).toBe('shipped');
    expect(waiting.steps.map((s) => [s.key, s.status])).toEqual([
      ['reserve-stock', 'succeeded'],
      ['charge-card', 'succeeded'],
      ['shipped', 'waiting'],
    ]);
    await baton.sendEvent(run.id, 'shipped', { tracking: 'T-1' });
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toMatchObject({ reservation: { sku: 'A1' }, charge: { amount: 5 }, shipped: { tracking: 'T-1' } });

    const late = await baton.startWorkflow('place-order', { shipWithinMs: 0 });
    const unshipped = await runInState(baton, late.run.id, 'succeeded');
    expect(unshipped.output).toMatchObject({ reservation: { sku: 'demo-sku' }, shipped: null, notice: { shipped: false } });
  });
});
