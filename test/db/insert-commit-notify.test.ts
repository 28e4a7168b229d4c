// The one-round-trip enqueue (insert, commit, NOTIFY) must end like any other query:
// its client's query_timeout timer cleared, its connection kept. When it did not, the
// timer fired queryTimeoutMs after every enqueue and destroyed the pool connection
// under whatever ran on it by then, and kept the process alive that long after stop().

import { afterEach, describe, expect, it } from 'vitest';
import { channelFor } from '../../src/core/notifier.ts';
import { type Baton, createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
const QUERY_TIMEOUT_MS = 400;
const APP = 'baton-icn-test';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** Backend pids of the producer's pool (one connection at most). */
async function poolBackends(): Promise<number[]> {
  const r = await db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
    [APP],
  );
  return r.rows.map((x) => x.pid);
}

describe('insert, commit and NOTIFY in one round trip', () => {
  let producer: Baton | undefined;
  afterEach(async () => {
    await producer?.stop({ drainMs: 0 });
    producer = undefined;
  });

  function makeProducer(): Baton {
    // One connection, so every statement of the test runs on the connection the enqueue used.
    const url = new URL(db.url);
    url.searchParams.set('application_name', APP);
    producer = createBaton({ connectionString: url.toString(), poolSize: 1, queryTimeoutMs: QUERY_TIMEOUT_MS });
    return producer;
  }

  it('leaves no timer behind: an enqueue arms no more timers than an ordinary statement', async () => {
    const p = makeProducer();
    // Inserts without NOTIFY open the connection (its release arms the pool's idle timer) and,
    // the first time, read what live workers can run; the second is the steady state.
    await p.enqueue({ jobType: 't', queue: 'icn' }, { notify: false });
    await p.enqueue({ jobType: 't', queue: 'icn' }, { notify: false });
    const afterRead = timers();
    const { created } = await p.enqueue({ jobType: 't', queue: 'icn' });
    expect(created).toBe(true);
    // No more than before: on a loaded machine one of the earlier timers (the pool's idle
    // timer) may fire in between, which is one fewer, never one more.
    expect(timers()).toBeLessThanOrEqual(afterRead);
  });

  it('keeps its connection past the query timeout, and the statements on it succeed', async () => {
    const p = makeProducer();
    const { job } = await p.enqueue({ jobType: 't', queue: 'icn' });
    const [pid] = await waitFor(
      async () => {
        const pids = await poolBackends();
        return pids.length === 1 ? pids : null;
      },
      { message: 'the producer pool to show one backend' },
    );
    // Statements on that connection across two query timeouts (inserts without NOTIFY, which
    // end the ordinary way): each must succeed on the same session.
    const until = Date.now() + 2.5 * QUERY_TIMEOUT_MS;
    let writes = 0;
    while (Date.now() < until) {
      await expect(p.enqueue({ jobType: 't', queue: 'icn-plain' }, { notify: false })).resolves.toMatchObject({ created: true });
      writes++;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(writes).toBeGreaterThan(5);
    expect(job.id).toMatch(/^\d+$/);
    expect(await poolBackends()).toEqual([pid]);
  });

  it('a NOTIFY it sends wakes a listener, and the enqueue answers only after the insert committed', async () => {
    const p = makeProducer();
    const listener = await db.pool.connect();
    try {
      const channel = channelFor('baton', 'icn');
      const got = new Promise<string>((resolve) => listener.on('notification', (n) => resolve(n.channel)));
      await listener.query(`LISTEN ${JSON.stringify(channel)}`);
      const { job } = await p.enqueue({ jobType: 't', queue: 'icn' });
      const seen = await db.query('SELECT 1 FROM baton.jobs WHERE id = $1', [job.id]);
      expect(seen.rowCount).toBe(1);
      await expect(got).resolves.toBe(channel);
    } finally {
      await listener.query('UNLISTEN *').catch(() => undefined);
      listener.release();
    }
  });
});
