// Caps and rate limits hold across worker processes, checked from the handlers' execution log
// (not from the database): four processes with 16 slots between them, a key capped at 5 (one
// process killed -9 while it runs capped jobs: its slots come back with its leases), a queue
// capped at 3, and a rate limit.

import { beforeEach, describe, expect, it } from 'vitest';
import { createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { peakRunning, peakStartsPerWindow, readRuns } from './execution-log.ts';
import { useFleet } from './fleet.ts';

const db = useTestDatabase();
const now = () => performance.timeOrigin + performance.now();
const startFleet = useFleet(db);

beforeEach(async () => {
  await db.query('TRUNCATE baton.jobs, baton.workers, baton.finished_counts, baton.flow_queues, baton.flow_keys, baton.flow_buckets');
});

async function enqueue(specs: Array<{ ms: number; concurrencyKey?: string }>): Promise<void> {
  const producer = createBaton({ connectionString: db.url, poolSize: 1 });
  try {
    await producer.enqueueMany(
      specs.map(({ ms, concurrencyKey }) => ({ jobType: 'work', queue: 'flow', payload: { ms }, concurrencyKey })),
    );
  } finally {
    await producer.stop();
  }
}

const succeeded = async () =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'succeeded'`)).rows[0]!.n;

describe('flow control across four worker processes', () => {
  it('never runs more than a key cap of 5, through a kill -9 of a worker running capped jobs', async () => {
    await db.query(`INSERT INTO baton.flow_keys (pattern, concurrency_limit) VALUES ('vendor:*', 5)`);
    const JOBS = 80;
    // Unkeyed jobs too: they are not counted against the key and run beside it.
    await enqueue([
      ...Array.from({ length: JOBS }, (_, i) => ({ ms: 30 + (i % 5) * 10, concurrencyKey: 'vendor:x' })),
      ...Array.from({ length: 20 }, () => ({ ms: 20 })),
    ]);
    const keyed = new Set(
      (await db.query<{ id: string }>(`SELECT id::text FROM baton.jobs WHERE concurrency_key = 'vendor:x'`)).rows.map((r) => r.id),
    );
    const f = await startFleet(4);
    // Kill a worker while it runs a capped job (its log has a start without an end). Whichever
    // process frees a slot refills it, so which processes hold the cap's slots is not fixed.
    // The run must have started within the last 10 ms: a capped job sleeps 30 ms or more, so it
    // cannot end between this read of the log and the kill (one that was about to end did, and
    // left the victim with no run to take over).
    const { victim } = await waitFor(
      () => {
        const i = f.logs.findIndex((log) => {
          const runs = readRuns([log], new Map());
          const fresh = (r: (typeof runs)[number]) => r.end === Number.POSITIVE_INFINITY && keyed.has(r.job) && now() - r.start < 10;
          return runs.some(fresh) && runs.length >= 3;
        });
        return i >= 0 ? { victim: i } : null;
      },
      { timeoutMs: 30_000, intervalMs: 2, message: 'a worker to be running a capped job' },
    );
    f.children[victim]!.kill('SIGKILL');
    f.killedAt.set(`w${victim}`, now());
    await waitFor(async () => (await succeeded()) === JOBS + 20, { timeoutMs: 60_000, intervalMs: 50, message: 'every job to succeed' });

    const runs = readRuns(f.logs, f.killedAt);
    const capped = runs.filter((r) => keyed.has(r.job));
    expect(capped.length).toBeGreaterThanOrEqual(JOBS);
    expect(peakRunning(capped)).toBe(5);
    // The victim was killed mid-run: its job ran again elsewhere once its lease came back.
    const killed = capped.filter((r) => r.worker === `w${victim}` && r.end === f.killedAt.get(`w${victim}`));
    expect(killed.length).toBeGreaterThanOrEqual(1);
    for (const k of killed) expect(capped.filter((r) => r.job === k.job).length).toBeGreaterThan(1);
  }, 120_000);

  it('never runs more than a queue cap of 3', async () => {
    await db.query(`INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ('flow', 3)`);
    await enqueue(Array.from({ length: 40 }, () => ({ ms: 25 })));
    const f = await startFleet(4);
    await waitFor(async () => (await succeeded()) === 40, { timeoutMs: 60_000, intervalMs: 50, message: 'every job to succeed' });
    expect(peakRunning(readRuns(f.logs, f.killedAt))).toBe(3);
  }, 120_000);

  it('starts at most a rate limit of 10 per 500 ms (bucket of 10) and waits, not fails, over it', async () => {
    await db.query(`INSERT INTO baton.flow_queues (queue, rate_limit, rate_period_ms) VALUES ('flow', 10, 500)`);
    await enqueue(Array.from({ length: 40 }, () => ({ ms: 1 })));
    const f = await startFleet(4);
    await waitFor(async () => (await succeeded()) === 40, { timeoutMs: 60_000, intervalMs: 50, message: 'every job to succeed' });
    const runs = readRuns(f.logs, f.killedAt);
    expect(runs).toHaveLength(40);
    // A bucket of 10 refilled at 10 per 500 ms: at most a full bucket plus what refills in any
    // window, by the claims' own times (database clock)...
    const claimedAt = (await db.query<{ t: number }>(`SELECT date_part('epoch', started_at) * 1000 AS t FROM baton.jobs`)).rows;
    expect(
      peakStartsPerWindow(
        claimedAt.map((r) => ({ job: '', attempt: 1, worker: '', start: r.t, end: r.t })),
        500,
      ),
    ).toBeLessThanOrEqual(20);
    // ...and by the handlers' log, which adds the jitter of each process getting to its log write.
    expect(peakStartsPerWindow(runs, 500)).toBeLessThanOrEqual(24);
    // After the first burst of 10, starts follow the refill: 30 more take about 1.5 s.
    const starts = runs.map((r) => r.start).sort((a, b) => a - b);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(1_300);
  }, 120_000);
});
