// The tutorials of docs/workflow-tutorials.md run as written there (with short timeouts and
// recording stand-ins for the side effects): Temporal's order workflow, DBOS's checkout,
// Inngest's waitForEvent with a match and its debounce.

import { describe, expect, it } from 'vitest';
import type { Baton, EnqueueResult } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();
const DAY = 24 * 3600_000;

interface Order {
  id: string;
  sku: string;
}

describe('docs/workflow-tutorials.md', () => {
  const engines = useWorkflowEngines(db);

  it("Temporal's order workflow: parallel steps, an approval with a deadline, a patch, a run timeout", async () => {
    const calls: string[] = [];
    const act = (name: string) => async (o: Order, extra?: unknown) => {
      calls.push(`${name}:${o.id}${extra ? `:${JSON.stringify(extra)}` : ''}`);
      return name;
    };
    const [reserveInventory, chargeCard, shipOrder, refund] = ['reserve', 'charge', 'ship', 'refund'].map(act) as Array<
      (o: Order, extra?: unknown) => Promise<string>
    >;
    const baton = engines.create({ queues: { orders: 2 } });
    baton.workflow<Order, string>(
      'order',
      async (ctx) => {
        await Promise.all([
          ctx.step('reserve-inventory', () => reserveInventory!(ctx.input)),
          ctx.step('charge-card', (step) => chargeCard!(ctx.input, { idempotencyKey: step.idempotencyKey })),
        ]);
        const decision = await ctx.waitForEvent<{ approved: boolean }>('approval', 'approve', { timeoutMs: 7 * DAY });
        if (!decision?.payload.approved) {
          await ctx.step('refund', () => refund!(ctx.input));
          return 'refunded';
        }
        if (await ctx.patched('ship-by-carrier')) await ctx.step('ship', () => shipOrder!(ctx.input, 'carrier'));
        else await ctx.step('ship', () => shipOrder!(ctx.input));
        return 'shipped';
      },
      { queue: 'orders', maxAttempts: 5, runTimeoutMs: 30 * DAY },
    );
    await baton.start();

    const { run } = await baton.startWorkflow('order', { id: 'o-1', sku: 'A1' }, { idempotencyKey: 'o-1' });
    expect((await baton.startWorkflow('order', { id: 'o-1', sku: 'A1' }, { idempotencyKey: 'o-1' })).duplicate).toBe(true);
    const waiting = await runInState(baton, run.id, 'waiting');
    expect(waiting.deadlineAt).not.toBeNull();
    expect(
      waiting.steps
        .filter((s) => s.kind === 'step')
        .map((s) => s.key)
        .sort(),
    ).toEqual(['charge-card', 'reserve-inventory']);
    await baton.sendEvent(run.id, 'approve', { approved: true });
    expect((await runInState(baton, run.id, 'succeeded')).output).toBe('shipped');

    const refused = await baton.startWorkflow('order', { id: 'o-2', sku: 'B2' }, { idempotencyKey: 'o-2' });
    await runInState(baton, refused.run.id, 'waiting');
    await baton.sendEvent(refused.run.id, 'approve', { approved: false });
    expect((await runInState(baton, refused.run.id, 'succeeded')).output).toBe('refunded');

    expect(
      calls
        .filter((c) => c.endsWith('o-1') || c.includes('o-1:'))
        .map((c) => c.split(':')[0])
        .sort(),
    ).toEqual(['charge', 'reserve', 'ship']);
    expect(calls).toContain('ship:o-1:"carrier"');
    expect(calls).toContain('refund:o-2');
    expect(calls.some((c) => c.startsWith('ship:o-2'))).toBe(false);
  });

  it("DBOS's checkout: the caller reads a step's output, the payment callback's event ends the wait, a child run dispatches", async () => {
    const dispatched: string[] = [];
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow<{ orderId: string }>('dispatch-order', async (ctx) => {
      await ctx.step('dispatch', () => dispatched.push(ctx.input.orderId));
    });
    baton.workflow('checkout', async (ctx) => {
      const orderId = await ctx.step('create-order', () => 'order-7');
      const reserved = await ctx.step('reserve', () => true);
      if (!reserved) return { paymentId: null };
      await ctx.step('payment-id', () => ctx.runId);
      const notification = await ctx.waitForEvent<string>('payment', 'payment-status', { timeoutMs: 60_000 });
      if (notification?.payload === 'paid') {
        await ctx.step('mark-paid', () => true);
        await ctx.all('dispatch', [{ workflow: 'dispatch-order', input: { orderId } }]);
        return 'paid';
      }
      await ctx.step('undo-reserve', () => true);
      return 'errored';
    });
    await baton.start();

    const { run } = await baton.startWorkflow('checkout', {}, { idempotencyKey: 'cart-1' });
    const paymentId = await waitForStep(baton, run.id, 'payment-id');
    expect(paymentId).toBe(run.id);
    await runInState(baton, run.id, 'waiting');
    expect(await baton.sendEvent(String(paymentId), 'payment-status', 'paid', { idempotencyKey: 'callback-1' })).toMatchObject({
      resumed: true,
    });
    expect(await baton.sendEvent(String(paymentId), 'payment-status', 'paid', { idempotencyKey: 'callback-1' })).toMatchObject({
      duplicate: true,
    });
    expect((await runInState(baton, run.id, 'succeeded')).output).toBe('paid');
    expect(dispatched).toEqual(['order-7']);
  });

  it("Inngest's waitForEvent with a match: another user's event is kept, the user's own ends the wait; no event nudges", async () => {
    const sent: string[] = [];
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow<{ userId: string; email: string; timeoutMs: number }>('send-onboarding-nudge-email', async (ctx) => {
      const completed = await ctx.waitForEvent('wait-for-onboarding-completion', 'onboarding.completed', {
        timeoutMs: ctx.input.timeoutMs,
        match: { userId: ctx.input.userId },
      });
      if (!completed) {
        await ctx.step('send-onboarding-nudge-email', () => sent.push(ctx.input.email));
      }
    });
    await baton.start();

    const ann = { userId: 'u-1', email: 'ann@example.com', timeoutMs: 60_000 };
    await baton.startWorkflow('send-onboarding-nudge-email', ann, { idempotencyKey: 'onboarding:u-1' });
    // On onboarding.completed: the same key answers the run already started.
    const { run, duplicate } = await baton.startWorkflow('send-onboarding-nudge-email', ann, { idempotencyKey: 'onboarding:u-1' });
    expect(duplicate).toBe(true);
    await runInState(baton, run.id, 'waiting');
    expect(await baton.sendEvent(run.id, 'onboarding.completed', { userId: 'u-2' })).toMatchObject({ resumed: false });
    expect(await baton.sendEvent(run.id, 'onboarding.completed', { userId: 'u-1' })).toMatchObject({ resumed: true });
    await runInState(baton, run.id, 'succeeded');

    const bob = await baton.startWorkflow('send-onboarding-nudge-email', { userId: 'u-3', email: 'bob@example.com', timeoutMs: 200 });
    await runInState(baton, bob.run.id, 'succeeded');
    expect(sent).toEqual(['bob@example.com']);
  });

  it("Inngest's debounce: a burst of one account's updates runs once, with the last payload", async () => {
    const synced: unknown[] = [];
    const baton = engines.create({
      queues: { default: 2 },
      handlers: {
        'handle-webhook': async (ctx) => {
          synced.push(ctx.payload);
        },
      },
    });
    await baton.start();
    const debounce = { key: 'account:42', windowMs: 300, maxWaitMs: 10_000 };
    const results: EnqueueResult[] = [];
    for (const n of [1, 2, 3]) {
      results.push(await baton.enqueue({ jobType: 'handle-webhook', payload: { account_id: 42, n }, debounce }));
    }
    expect(results.map((r) => r.created)).toEqual([true, false, false]);
    expect(new Set(results.map((r) => r.job.id)).size).toBe(1);
    await waitFor(async () => (await baton.admin.getJob(results[0]!.job.id))?.state === 'succeeded', {
      message: 'the debounced job to run',
    });
    expect(synced).toEqual([{ account_id: 42, n: 3 }]);
  });
});

/** A step's committed output, read from the run as a caller outside it reads it (DBOS's getEvent). */
async function waitForStep(baton: Baton, runId: string, key: string): Promise<unknown> {
  let output: unknown;
  await waitFor(
    async () => {
      const step = (await baton.workflows.getRun(runId))?.steps.find((s) => s.key === key && s.status === 'succeeded');
      output = step?.output;
      return step !== undefined;
    },
    { message: `step "${key}" of run ${runId} to commit` },
  );
  return output;
}
