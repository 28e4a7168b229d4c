// The dispatcher's drain mode without a database: after a claim that filled every free slot it
// claims again when a handler returns; after a claim a cap or rate limit bound (the database
// still counts a finished job's lease until its outcome is written) it claims again only once
// the outcome write is done, so it does not spend a claim, and the cap's lock, on a slot that
// is not free yet.
import { describe, expect, it } from 'vitest';
import { type ClaimOutcome, QueueDispatcher } from '../../src/core/dispatcher.ts';

/** A dispatcher whose claims answer from `answers` in turn; `claims` records each limit asked. */
function harness(answers: ClaimOutcome[]) {
  const claims: number[] = [];
  const d = new QueueDispatcher({
    queue: 'q',
    concurrency: 4,
    claimAndStart: async (limit) => {
      claims.push(limit);
      const r = answers.shift() ?? { got: 0 };
      for (let i = 0; i < r.got; i++) d.acquired();
      return r;
    },
    onError: (err) => {
      throw err;
    },
  });
  return { d, claims };
}

/** Lets the dispatcher's deferred refill (setImmediate) and the claim it starts run. */
const turns = async () => {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
};

describe('QueueDispatcher drain mode', () => {
  it('claims again when a handler returns after a claim that filled every slot', async () => {
    const { d, claims } = harness([{ got: 4 }, { got: 1 }]);
    d.start();
    await turns();
    expect(claims).toEqual([4]);
    d.handlerDone();
    await turns();
    expect(claims).toEqual([4, 1]);
    d.stop();
  });

  it('after a claim a limit bound, claims again when the outcome is written, not when the handler returns', async () => {
    const { d, claims } = harness([
      { got: 1, more: true },
      { got: 1, more: true },
    ]);
    d.start();
    await turns();
    expect(claims).toEqual([4]);
    d.handlerDone();
    await turns();
    expect(claims).toEqual([4]);
    d.writeDone();
    await turns();
    expect(claims).toEqual([4, 4]);
    d.stop();
  });

  it('takes a claim that got nothing and no limit for a drained queue: no claim until woken', async () => {
    const { d, claims } = harness([{ got: 1 }, { got: 0 }]);
    d.start();
    await turns();
    d.handlerDone();
    d.writeDone();
    await turns();
    expect(claims).toEqual([4]);
    d.wake();
    await turns();
    expect(claims).toEqual([4, 4]);
    d.stop();
  });
});
