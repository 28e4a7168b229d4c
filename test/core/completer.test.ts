// The completer without a database: an outcome that waits in the buffer (behind a
// flush stuck on a starved pool) until its lease can no longer be proven is
// abandoned, never sent; one whose lease is still provable is written.
import { describe, expect, it } from 'vitest';
import { Completer, type OutcomeLease, type WriteResult } from '../../src/core/completer.ts';
import { parseEngineConfig } from '../../src/core/config.ts';
import type { Executor } from '../../src/driver/executor.ts';
import { deferred } from '../helpers/wait.ts';

/** Submits a completion of job `id` and resolves with what the completer answered. */
function complete(completer: Completer, id: string, token: string, lease: OutcomeLease): Promise<WriteResult> {
  return new Promise((written) => completer.submit({ id, token, queue: 'q', result: null, failure: null, refund: false, lease, written }));
}

describe('Completer', () => {
  it('does not send an outcome whose lease could no longer be proven while it waited behind a stuck flush', async () => {
    const stuck = deferred<void>();
    const sent: string[][] = [];
    const executor = {
      jobCompleteMany: async (p: { items: Array<{ id: string }> }) => {
        const ids = p.items.map((i) => i.id);
        sent.push(ids);
        if (ids.includes('1')) await stuck.promise;
        return new Set(ids);
      },
    } as unknown as Executor;
    const completer = new Completer({
      executor,
      config: parseEngineConfig({}, () => 'w'),
      onFenced: () => undefined,
      onError: () => undefined,
    });
    const held = { lost: false, unproven: () => false };
    const first = complete(completer, '1', '10', held);
    // Let the first flush start (it hangs), then queue two more behind it.
    await new Promise((r) => setImmediate(r));
    let deadlinePassed = false;
    const late = complete(completer, '2', '20', { lost: false, unproven: () => deadlinePassed });
    const fine = complete(completer, '3', '30', held);
    deadlinePassed = true;
    stuck.resolve();
    expect(await first).toEqual({ accepted: true, state: 'succeeded' });
    expect(await late).toEqual({ accepted: false, reason: 'abandoned' });
    expect(await fine).toEqual({ accepted: true, state: 'succeeded' });
    expect(sent).toEqual([['1'], ['3']]);
  });
});
