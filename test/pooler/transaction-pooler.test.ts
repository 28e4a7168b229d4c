// Baton through a real PgBouncer in transaction pooling mode (started by this file on a free
// port): enqueue, claims, retries, outcomes, fencing and admin reads and actions all go through
// the pooler (its own count of transactions says so), with a direct URL for LISTEN, the
// presence lock and migrations, and without one (polling only, leases reclaimed at expiry).
// Options a pooler cannot serve are refused by name.

import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openPool } from '../../src/db/pg/open-pool.ts';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { type Baton, BatonError, createBaton, TerminalError } from '../../src/index.ts';
import { freePort, runBaton, waitExit, waitReady } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { type PgBouncer, pgbouncerBinary, startPgBouncer } from '../helpers/pgbouncer.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
let bouncer: PgBouncer;
const batons: Baton[] = [];

// CI installs pgbouncer (.ci/run); a machine without it skips this file, saying so.
const available = pgbouncerBinary() !== null;
if (!available) console.warn('test/pooler: pgbouncer is not installed; skipped (apt-get install pgbouncer)');

beforeAll(async () => {
  if (available) bouncer = await startPgBouncer(db.url, 'transaction', 4);
});
afterAll(async () => {
  await Promise.all(batons.splice(0).map((b) => b.stop({ drainMs: 1_000 })));
  await bouncer?.stop();
});
beforeEach(async () => {
  await Promise.all(batons.splice(0).map((b) => b.stop({ drainMs: 1_000 })));
  await db.query('TRUNCATE baton.jobs, baton.workers, baton.finished_counts');
});

const through = () => bouncer.url(db.name);

function create(direct: boolean, options: Parameters<typeof createBaton>[0] = {}): Baton {
  const b = createBaton({
    connectionString: through(),
    pooler: 'transaction',
    ...(direct && { directConnectionString: db.url }),
    poolSize: 4,
    pollIntervalMs: direct ? 60_000 : 100,
    backoffBaseMs: 1,
    backoffCapMs: 5,
    ...options,
  });
  batons.push(b);
  return b;
}

const states = async () =>
  (
    await db.query<{ state: string; attempt: number; n: number }>(
      'SELECT state, attempt, count(*)::int AS n FROM baton.jobs GROUP BY 1, 2 ORDER BY 1, 2',
    )
  ).rows;

describe.runIf(available).each([
  ['with a direct URL', true],
  ['without a direct URL (polling only)', false],
])('through PgBouncer in transaction mode, %s', (_, direct) => {
  it('enqueues, claims, retries and writes outcomes through the pooler', async () => {
    const flaky = new Set<string>();
    const baton = create(direct, {
      queues: { q: 8 },
      handlers: {
        ok: () => 'done',
        flaky: (ctx) => {
          if (!flaky.has(ctx.job.id)) {
            flaky.add(ctx.job.id);
            throw new Error('first attempt fails');
          }
          return 'second';
        },
        refused: () => {
          throw new TerminalError('no');
        },
      },
    });
    const before = await bouncer.transactions(db.name);
    await baton.start();
    await baton.enqueueMany(Array.from({ length: 200 }, () => ({ jobType: 'ok', queue: 'q' })));
    for (let i = 0; i < 10; i++) await baton.enqueue({ jobType: 'flaky', queue: 'q', maxAttempts: 3 });
    await baton.enqueue({ jobType: 'refused', queue: 'q' });
    await waitFor(
      async () => (await states()).reduce((s, r) => s + (r.state === 'pending' || r.state === 'running' ? 0 : r.n), 0) === 211,
      {
        timeoutMs: 30_000,
        message: 'every job to finish',
      },
    );
    expect(await states()).toEqual([
      { state: 'dead_lettered', attempt: 1, n: 1 },
      { state: 'succeeded', attempt: 1, n: 200 },
      { state: 'succeeded', attempt: 2, n: 10 },
    ]);
    // The pooler carried them: the eleven single enqueues alone are eleven transactions, and
    // claims and outcomes add theirs (batched, so fewer than one a job).
    expect((await bouncer.transactions(db.name)) - before).toBeGreaterThan(11 + 20);
    // And Baton left no session setting on the server sessions: each of the pooler's four, held
    // at once, shows the server's own value.
    const serverValue = (await db.query('SHOW max_parallel_workers_per_gather')).rows[0].max_parallel_workers_per_gather;
    const clients = Array.from({ length: 4 }, () => new pg.Client({ connectionString: through() }));
    try {
      await Promise.all(clients.map((c) => c.connect()));
      await Promise.all(clients.map((c) => c.query('BEGIN')));
      const shown = await Promise.all(
        clients.map(async (c) => (await c.query('SHOW max_parallel_workers_per_gather')).rows[0].max_parallel_workers_per_gather),
      );
      expect(shown).toEqual([serverValue, serverValue, serverValue, serverValue]);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it("enqueues and records outbox messages in the caller's own transactions through the pooler", async () => {
    const baton = create(direct, { queues: {} });
    // The caller's connections also go through PgBouncer: each new one may get a server session
    // an earlier one used, which still holds whatever statements that one named.
    for (let i = 0; i < 6; i++) {
      const client = new pg.Client({ connectionString: through() });
      await client.connect();
      try {
        await client.query('BEGIN');
        await baton.enqueue({ jobType: 'x', queue: 'txn' }, { client });
        await baton.outbox.record({ destination: 'hooks', topic: 't', messageKey: `m${i}`, payload: { i } }, { client });
        await client.query('COMMIT');
      } finally {
        await client.end();
      }
    }
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = 'txn'`)).rows[0].n).toBe(6);
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.outbox WHERE destination = 'hooks'`)).rows[0].n).toBe(6);
  });

  it('answers admin reads and actions through the pooler', async () => {
    const baton = create(direct, { queues: {} });
    const { job } = await baton.enqueue({ jobType: 'x', queue: 'admin' });
    const page = await baton.admin.listJobs({ queue: 'admin' });
    expect(page.jobs.map((j) => j.id)).toEqual([job.id]);
    expect((await baton.admin.getJob(job.id)).state).toBe('pending');
    expect((await baton.admin.queueDepth('admin')).pending).toBe(1);
    expect((await baton.admin.cancel(job.id)).state).toBe('cancelled');
    await expect(baton.admin.replay(job.id)).resolves.toMatchObject({ state: 'pending' });
    await expect(baton.admin.getJob('999999999')).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });
    expect((await baton.admin.health()).tables.length).toBeGreaterThan(0);
  });

  it('fences outcomes by the lease token through the pooler', async () => {
    const pool = openPool({ connectionString: through(), max: 2 }, 'transaction');
    try {
      const ex = new PgExecutor(pool, '"baton"');
      const id = (await db.query<{ id: string }>(`INSERT INTO baton.jobs (queue, job_type) VALUES ('fence', 'x') RETURNING id::text`))
        .rows[0]!.id;
      const claim = (owner: string) => ex.jobClaim({ queue: 'fence', limit: 1, owner, intoRunning: true, leaseMs: 60_000 });
      const [stale] = await claim('slow');
      await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
      expect((await ex.jobReap({ limit: 10, graceMs: 60_000, fastReclaim: false })).map((r) => r.id)).toEqual([id]);
      const [current] = await claim('new');
      expect(BigInt(current!.token) > BigInt(stale!.token)).toBe(true);
      expect((await ex.jobCompleteMany({ items: [{ id, token: stale!.token, result: 'late' }] })).size).toBe(0);
      expect([...(await ex.jobCompleteMany({ items: [{ id, token: current!.token, result: 'mine' }] }))]).toEqual([id]);
      const row = (await db.query('SELECT state, result FROM baton.jobs WHERE id = $1', [id])).rows[0];
      expect(row).toEqual({ state: 'succeeded', result: 'mine' });
      // The leader's VACUUM, a statement outside any transaction, goes through the pooler too.
      await ex.jobVacuum();
    } finally {
      await pool.end();
    }
  });

  it(direct ? 'migrates and listens over the direct URL' : 'refuses a migration it cannot apply, and runs jobs by polling', async () => {
    const baton = create(direct, { queues: { q: 2 }, handlers: { ok: () => 'done' } });
    // Up to date (the file's database is migrated): nothing to apply, through the pooler too.
    await expect(baton.migrate()).resolves.toMatchObject({ applied: [] });
    if (!direct) {
      // One pending (its record taken away): refused, naming it, with nothing applied.
      const [last] = (await db.query<{ name: string }>('SELECT max(name) AS name FROM baton.schema_migrations')).rows;
      await db.query('DELETE FROM baton.schema_migrations WHERE name = $1', [last!.name]);
      try {
        await expect(baton.migrate()).rejects.toMatchObject({
          code: 'INVALID_CONFIG',
          message: expect.stringContaining(`1 migration(s) pending (${last!.name} first)`),
        });
      } finally {
        await db.query('INSERT INTO baton.schema_migrations (name) VALUES ($1)', [last!.name]);
      }
    }
    await baton.start();
    expect(baton.stats().presenceHeld).toBe(true);
    // From another process's producer, through the pooler: with a direct URL the worker polls
    // once a minute here, so only its LISTEN can start the job within the wait's 10 s.
    const producer = create(direct, { queues: {} });
    await producer.enqueue({ jobType: 'ok', queue: 'q' });
    await waitFor(async () => (await states()).some((r) => r.state === 'succeeded'), { message: 'the job to run' });
  });
});

describe.runIf(available).each([
  ['and BATON_DIRECT_URL', true],
  ['alone (polling only)', false],
])('the daemon through PgBouncer with BATON_POOLER=transaction %s', (_, direct) => {
  it('serves, enqueues over HTTP and runs the job', async () => {
    const port = await freePort();
    const d = runBaton(['serve', '--port', String(port), '--queues', 'default:2'], {
      DATABASE_URL: through(),
      BATON_POOLER: 'transaction',
      ...(direct && { BATON_DIRECT_URL: db.url }),
      BATON_DEMO_HANDLERS: 'true',
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      await waitReady(d, base, 20_000);
      const res = await fetch(`${base}/api/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jobType: 'noop' }),
      });
      expect(res.status).toBe(201);
      const job = (await res.json()) as { id: string };
      await waitFor(async () => (await db.query('SELECT state FROM baton.jobs WHERE id = $1', [job.id])).rows[0]?.state === 'succeeded', {
        message: 'the job to succeed',
      });
      d.child.kill('SIGTERM');
      expect(await waitExit(d, 30_000)).toBe(0);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- daemon output ---\n${d.output().slice(-3000)}`);
    } finally {
      d.kill();
    }
  });
});

describe.runIf(available)('options a transaction pooler cannot serve', () => {
  const invalid = (o: Parameters<typeof createBaton>[0]) => {
    try {
      createBaton(o);
    } catch (err) {
      expect(err).toBeInstanceOf(BatonError);
      return (err as BatonError).message;
    }
    throw new Error('expected INVALID_CONFIG');
  };

  it('are refused at createBaton, naming the option', () => {
    const base = { connectionString: 'postgres://x@127.0.0.1:1/x', pooler: 'transaction' as const };
    expect(invalid({ ...base, asyncClaims: true })).toMatch(/asyncClaims/);
    expect(invalid({ ...base, dispatch: 'notify' })).toMatch(/dispatch: 'notify' needs LISTEN/);
    expect(invalid({ ...base, pooler: 'session' as never })).toMatch(/pooler must be/);
    expect(invalid({ ...base, directConnectionString: '' })).toMatch(/directConnectionString must be a URL/);
    expect(invalid({ connectionString: base.connectionString, directConnectionString: base.connectionString })).toMatch(
      /directConnectionString is used only with pooler/,
    );
  });
});
