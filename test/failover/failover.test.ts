// A primary failover under load, through a multi-host URL: with synchronous replication no
// acknowledged enqueue or outcome is lost, no token is handed out twice and no outcome is
// accepted twice; engines follow the new primary without a restart. The asynchronous case,
// with its losses counted, runs in bench/failover.ts (npm run bench:failover).
import { describe, expect, it } from 'vitest';
import { clusterUnavailable } from '../helpers/pg-cluster.ts';
import { runFailover } from './scenario.ts';

// A machine that cannot start private clusters skips this, saying so.
const unavailable = clusterUnavailable();
if (unavailable) console.warn(`test/failover/failover.test.ts: skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('primary failover with synchronous replication', () => {
  it('loses nothing acknowledged, reuses no token, accepts no stale outcome, and resumes', async () => {
    const r = await runFailover({ mode: 'sync', before: 200, after: 100 });
    expect(r.acknowledgedEnqueues).toBeGreaterThanOrEqual(300);
    expect({
      lostEnqueues: r.lostEnqueues,
      lostOutcomes: r.lostOutcomes,
      reusedTokens: r.reusedTokens,
      stale: r.staleWritesAccepted,
      unfinished: r.unfinished,
    }).toEqual({
      lostEnqueues: 0,
      lostOutcomes: 0,
      reusedTokens: 0,
      stale: 0,
      unfinished: 0,
    });
    // Engines resumed on the new primary without a restart: claims, enqueues, LISTEN, presence.
    expect({ listeners: r.listenersBack, presence: r.presenceBack, leader: r.leaderBack }).toEqual({
      listeners: 2,
      presence: 2,
      leader: true,
    });
    expect(Number.isFinite(r.resumeOutcomeMs)).toBe(true);
    expect(Number.isFinite(r.resumeEnqueueMs)).toBe(true);
    console.log(JSON.stringify(r));
  }, 180_000);
});
