// Conformance of the fair claim and the flow-controlled claim (jobClaimFlow) on a real database:
// round-robin across tenants with weights, priority within a tenant, caps per queue and per key
// (pattern and per job), token-bucket rate limits and their wake-up hint, and that a plain claim
// never takes a controlled queue's jobs.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import type { FairCursor, FlowClaimResult } from '../../src/driver/executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { claim, ex, fresh, LEASE, newJob, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

async function enqueue(queue: string, n: number, over: Parameters<typeof newJob>[0] = {}): Promise<string[]> {
  const jobs = Array.from({ length: n }, () => newJob({ queue, ...over }));
  return (await ex.jobInsertMany({ jobs })).map((j) => j.job.id);
}

/** A claimer's view: its cursor carried from one claim to the next, as the Claimer keeps it. */
function claimer(queue: string, opts: { fair?: boolean; controlled?: boolean } = {}) {
  let cursor: FairCursor = { tenant: '', used: 0 };
  let keyCursor = '';
  let solo = false;
  let plain = true;
  return async (limit: number): Promise<FlowClaimResult> => {
    const r = await ex.jobClaimFlow({
      queue,
      limit,
      owner: 'w-a',
      leaseMs: LEASE,
      intoRunning: true,
      fair: opts.fair ?? true,
      controlled: opts.controlled ?? false,
      cursor,
      keyCursor,
      solo,
      plain,
    });
    cursor = r.cursor;
    keyCursor = r.keyCursor;
    solo = r.solo;
    plain = r.plain;
    return r;
  };
}

const tenants = (r: FlowClaimResult) => r.jobs.map((j) => j.tenantId).sort();
const complete = (r: FlowClaimResult) => ex.jobCompleteMany({ items: r.jobs.map((j) => ({ id: j.id, token: j.token, result: null })) });

describe('fair claim', () => {
  it('takes tenants round-robin, so a small tenant is served beside a large backlog', async () => {
    const queue = fresh();
    await enqueue(queue, 50, { tenantId: 'acme' });
    const small = await enqueue(queue, 3, { tenantId: 'zeta' });
    const next = claimer(queue);
    const first = await next(4);
    expect(tenants(first)).toEqual(['acme', 'acme', 'zeta', 'zeta']);
    const second = await next(4);
    // zeta's last job, and acme fills the rest.
    expect(tenants(second)).toEqual(['acme', 'acme', 'acme', 'zeta']);
    expect(
      [...first.jobs, ...second.jobs]
        .filter((j) => j.tenantId === 'zeta')
        .map((j) => j.id)
        .sort(),
    ).toEqual(small.sort());
  });

  it('walks past tenants that hold only future jobs: due jobs of a later tenant are claimed', async () => {
    const queue = fresh();
    // Two tenants ahead of the cursor with nothing due for a day, then one with due work.
    await enqueue(queue, 1, { tenantId: 'a', delayMs: 86_400_000 });
    await enqueue(queue, 1, { tenantId: 'b', delayMs: 86_400_000 });
    const due = await enqueue(queue, 5, { tenantId: 'c' });
    const next = claimer(queue);
    const first = await next(1);
    expect(first.jobs.map((j) => j.id)).toEqual([due[0]]);
    // And so on, one claim per job, until c's work is done.
    for (const id of due.slice(1)) expect((await next(1)).jobs.map((j) => j.id)).toEqual([id]);
    expect((await next(1)).jobs).toEqual([]);
  });

  it('honours weights across claims of one job each (the cursor carries the slice)', async () => {
    const queue = fresh();
    await db.query(
      `INSERT INTO baton.tenant_weights (tenant_id, weight) VALUES ('heavy', 3) ON CONFLICT (tenant_id) DO UPDATE SET weight = 3`,
    );
    await enqueue(queue, 20, { tenantId: 'heavy' });
    await enqueue(queue, 20, { tenantId: 'light' });
    const next = claimer(queue);
    const order: string[] = [];
    for (let i = 0; i < 12; i++) order.push(...(await next(1)).jobs.map((j) => j.tenantId));
    expect(order.filter((t) => t === 'heavy')).toHaveLength(9);
    expect(order.filter((t) => t === 'light')).toHaveLength(3);
    // Never more than 3 heavy in a row.
    expect(order.join(',')).not.toContain('heavy,heavy,heavy,heavy');
  });

  it('keeps priority, then run_at, within a tenant, and a lone tenant drains in FIFO order', async () => {
    const queue = fresh();
    const low = await enqueue(queue, 3, { tenantId: 't', priority: 0 });
    const high = await enqueue(queue, 2, { tenantId: 't', priority: 5 });
    const r = await claimer(queue)(3);
    expect(r.jobs.map((j) => j.id)).toEqual([...high, low[0]]);
  });

  it('claims a one-tenant queue in claim order up to its limit and says no slice bound it', async () => {
    const queue = fresh();
    const late = await enqueue(queue, 2, { tenantId: 'solo', priority: 0 });
    const urgent = await enqueue(queue, 2, { tenantId: 'solo', priority: 9 });
    const next = claimer(queue);
    const r = await next(3);
    expect(r.jobs.map((j) => j.id)).toEqual([...urgent, late[0]]);
    expect(r).toMatchObject({ sliced: false, solo: true });
    // The next claims go through the one-tenant statement; an empty claim of a one-tenant (or
    // empty) queue says so too.
    expect(await next(3)).toMatchObject({ sliced: false, solo: true });
    expect(await next(3)).toMatchObject({ jobs: [], sliced: false, solo: true });
    // A second tenant: the one-tenant statement takes nothing and the fair claim follows in the
    // same call, round-robin again, and may stop at the slices.
    await enqueue(queue, 3, { tenantId: 'other' });
    await enqueue(queue, 3, { tenantId: 'solo' });
    const mixed = await next(4);
    expect(mixed).toMatchObject({ sliced: true, solo: false });
    expect(tenants(mixed)).toEqual(['other', 'other', 'solo', 'solo']);
  });

  it("claims a queue of the default tenant alone in FIFO order until any writer inserts another tenant's job", async () => {
    const queue = fresh();
    const marked = async (q: string) =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.tenant_queues WHERE queue = $1`, [q])).rows[0]!.n > 0;
    const next = claimer(queue);
    expect(await next(2)).toMatchObject({ jobs: [], plain: true, solo: true });
    const late = await enqueue(queue, 3, { priority: 0 });
    const urgent = await enqueue(queue, 1, { priority: 9 });
    const first = await next(2);
    expect(first.jobs.map((j) => j.id)).toEqual([urgent[0], late[0]]);
    expect(first).toMatchObject({ plain: true, solo: true, sliced: false });
    expect(await marked(queue)).toBe(false);
    // A producer's own SQL, not Baton's insert: the trigger marks the queue in its transaction.
    await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type) VALUES ($1, 'acme', 't'), ($1, 'acme', 't')`, [queue]);
    expect(await marked(queue)).toBe(true);
    // The plain statement now takes nothing and the fair claim follows in the same call.
    const mixed = await next(2);
    expect(mixed).toMatchObject({ plain: false, solo: false });
    expect(tenants(mixed)).toEqual(['acme', 'default']);
    // A queue stays marked: the next claims skip the plain statement.
    expect(await next(2)).toMatchObject({ plain: false });
    // SQL that moves a job to another queue, or gives it another tenant, marks its queue too.
    const [moved, retenanted] = [fresh(), fresh()];
    const [a] = await enqueue(fresh(), 1, { tenantId: 'acme' });
    await db.query(`UPDATE baton.jobs SET queue = $1 WHERE id = $2`, [moved, a]);
    const [c] = await enqueue(retenanted, 1);
    expect(await marked(retenanted)).toBe(false);
    await db.query(`UPDATE baton.jobs SET tenant_id = 'acme' WHERE id = $1`, [c]);
    expect([await marked(moved), await marked(retenanted)]).toEqual([true, true]);
    // A default-tenant job moved elsewhere marks nothing.
    const [plainQueue, d] = [fresh(), (await enqueue(fresh(), 1))[0]];
    await db.query(`UPDATE baton.jobs SET queue = $1 WHERE id = $2`, [plainQueue, d]);
    expect(await marked(plainQueue)).toBe(false);
  });

  it('claims nothing from a flow-controlled queue (its claims go through the controlled claim)', async () => {
    const queue = fresh();
    await enqueue(queue, 3);
    await db.query(`INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ($1, 10)`, [queue]);
    expect((await claimer(queue)(10)).jobs).toEqual([]);
    expect(await claim(queue, 10)).toEqual([]);
    expect((await claimer(queue, { controlled: true })(10)).jobs).toHaveLength(3);
  });

  it('enqueueing a keyed job marks its queue controlled first', async () => {
    const queue = fresh();
    await enqueue(queue, 1, { concurrencyKey: 'k:1' });
    expect(await ex.flowListControlled({ queues: [queue, fresh()] })).toEqual(new Set([queue]));
    expect(await claim(queue, 10)).toEqual([]);
  });
});

describe('controlled claim: caps', () => {
  it('caps a key fleet-wide by pattern; finishing or reaping a job frees its slot', async () => {
    const queue = fresh();
    const key = `vendor:${queue}`;
    await db.query(`INSERT INTO baton.flow_keys (pattern, concurrency_limit) VALUES ('vendor:*', 2)`).catch(() => undefined);
    await enqueue(queue, 6, { concurrencyKey: key });
    const next = claimer(queue, { controlled: true });
    const a = await next(10);
    expect(a.jobs).toHaveLength(2);
    // The claim that took the cap's last slot says so: its worker claims again as slots free
    // instead of taking the queue for drained and waiting for a poll.
    expect(a.limited).toBe(true);
    const b = await next(10);
    expect(b.jobs).toHaveLength(0);
    expect(b.limited).toBe(true);
    expect(b.wakeMs).toBeNull();
    await complete({ ...a, jobs: a.jobs.slice(0, 1) });
    const c = await next(10);
    expect(c.jobs).toHaveLength(1);
    expect(c.limited).toBe(true);
    // A lease that expires and is reaped gives its slot back.
    await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [a.jobs[1]!.id]);
    await ex.jobReap({ limit: 1000, graceMs: 60_000, fastReclaim: false });
    expect((await next(10)).jobs).toHaveLength(1);
  });

  it("a job's own concurrencyLimit caps its key; a capped key does not hold back others", async () => {
    const queue = fresh();
    await enqueue(queue, 5, { concurrencyKey: `own:${queue}`, concurrencyLimit: 1, priority: 10 });
    await enqueue(queue, 2, { concurrencyKey: `free:${queue}` });
    await enqueue(queue, 2);
    expect((await claimer(queue, { controlled: true })(10)).jobs).toHaveLength(5);
    const rows = await db.query<{ k: string | null; n: number }>(
      `SELECT concurrency_key AS k, count(*)::int AS n FROM baton.jobs WHERE queue = $1 AND state = 'running' GROUP BY 1 ORDER BY 1`,
      [queue],
    );
    expect(rows.rows).toEqual([
      { k: `free:${queue}`, n: 2 },
      { k: `own:${queue}`, n: 1 },
      { k: null, n: 2 },
    ]);
  });

  it('caps a queue across claimers', async () => {
    const queue = fresh();
    await db.query(`INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ($1, 3)`, [queue]);
    await enqueue(queue, 10);
    const one = claimer(queue, { controlled: true });
    const two = claimer(queue, { controlled: true });
    const [a, b] = await Promise.all([one(10), two(10)]);
    expect(a.jobs.length + b.jobs.length).toBe(3);
    expect((await one(10)).limited).toBe(true);
  });

  for (const pipelined of [false, true]) {
    it(`a claim that cannot get the queue lock in time takes nothing, says when to try again, and leaves its session usable (${pipelined ? 'pipelined' : 'plain'} pool)`, async () => {
      const queue = fresh();
      await db.query(`INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ($1, 3)`, [queue]);
      await enqueue(queue, 2);
      // The engine's own pool pipelines; a pool the caller passes may not.
      const pool = new pg.Pool({ connectionString: db.url, max: 1, pipeline: pipelined } as pg.PoolConfig);
      const exec = new PgExecutor(pool, quoteSchema(db.schema));
      const claimOnce = (limit: number) =>
        exec.jobClaimFlow({
          queue,
          limit,
          owner: 'w-a',
          leaseMs: LEASE,
          intoRunning: true,
          fair: true,
          controlled: true,
          cursor: { tenant: '', used: 0 },
          keyCursor: '',
        });
      const holder = await db.pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM baton.flow_queues WHERE queue = $1 FOR UPDATE', [queue]);
        const busy = await claimOnce(10);
        expect(busy.jobs).toEqual([]);
        expect(busy.limited).toBe(true);
        expect(busy.wakeMs).toBeGreaterThanOrEqual(100);
        await holder.query('COMMIT');
        // The pool's one session is out of the transaction, with the server's lock_timeout again.
        const after = await pool.query<{ s: string; tx: string }>(
          `SELECT current_setting('lock_timeout') AS s, now() = statement_timestamp() AS tx`,
        );
        expect(after.rows[0]).toEqual({ s: '0', tx: true });
        expect((await claimOnce(10)).jobs).toHaveLength(2);
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        holder.release();
        await pool.end();
      }
    });
  }
});

describe('controlled claim: rate limits', () => {
  it('starts at most N per period and says when the bucket has a token again', async () => {
    const queue = fresh();
    await db.query(`INSERT INTO baton.flow_queues (queue, rate_limit, rate_period_ms) VALUES ($1, 3, 60000)`, [queue]);
    await enqueue(queue, 10);
    const next = claimer(queue, { controlled: true });
    const a = await next(10);
    expect(a.jobs).toHaveLength(3);
    expect(a.limited).toBe(true);
    // One token per 20 s: the next one is about 20 s away.
    expect(a.wakeMs).toBeGreaterThan(15_000);
    expect(a.wakeMs).toBeLessThanOrEqual(20_000);
    const b = await next(10);
    expect(b.jobs).toHaveLength(0);
    // The bucket refills with time (database clock): move its last refill back 20 s.
    await db.query(`UPDATE baton.flow_queues SET refilled_at = refilled_at - interval '20 seconds' WHERE queue = $1`, [queue]);
    expect((await next(10)).jobs).toHaveLength(1);
  });

  it('rate-limits a key across queues', async () => {
    const q1 = fresh();
    const q2 = fresh();
    const key = `rl:${q1}`;
    await db.query(`INSERT INTO baton.flow_keys (pattern, rate_limit, rate_period_ms) VALUES ($1, 2, 60000)`, [key]);
    await enqueue(q1, 3, { concurrencyKey: key });
    await enqueue(q2, 3, { concurrencyKey: key });
    const a = await claimer(q1, { controlled: true })(10);
    const b = await claimer(q2, { controlled: true })(10);
    expect(a.jobs.length + b.jobs.length).toBe(2);
    expect(b.wakeMs).not.toBeNull();
  });
});

describe('flow admin writes and the snapshot', () => {
  it('writes limits and weights whole, drops a queue row left without limits, and reads them back', async () => {
    const queue = fresh();
    await ex.flowSetQueue({ queue, concurrencyLimit: 4, rateLimit: { limit: 7, periodMs: 500 } });
    await ex.flowSetKey({ pattern: `${queue}:*`, concurrencyLimit: 3, rateLimit: null });
    await ex.flowSetWeight({ tenantId: `t-${queue}`, weight: 5 });
    await enqueue(queue, 2, { tenantId: `t-${queue}`, concurrencyKey: `${queue}:a` });
    let s = await ex.flowSnapshot({ groups: 1000 });
    expect(s.queues.find((q) => q.queue === queue)).toMatchObject({
      concurrencyLimit: 4,
      rateLimit: { limit: 7, periodMs: 500 },
      keyed: true,
      running: 0,
      due: 2,
      tokens: 7,
    });
    expect(s.keyPatterns).toContainEqual({ pattern: `${queue}:*`, concurrencyLimit: 3, rateLimit: null });
    expect(s.weights).toContainEqual({ tenantId: `t-${queue}`, weight: 5 });
    expect(s.tenants).toContainEqual({ queue, tenantId: `t-${queue}`, pending: 2, running: 0 });
    expect(s.keys).toContainEqual({
      key: `${queue}:a`,
      pending: 2,
      due: 2,
      running: 0,
      concurrencyLimit: 3,
      rateLimit: null,
      tokens: null,
    });

    expect(await ex.flowDeleteKey({ pattern: `${queue}:*` })).toBe(true);
    expect(await ex.flowDeleteKey({ pattern: `${queue}:*` })).toBe(false);
    await ex.flowSetWeight({ tenantId: `t-${queue}`, weight: null });
    // Keyed: the row stays (its claims still need the controlled claim), without limits.
    await ex.flowSetQueue({ queue, concurrencyLimit: null, rateLimit: null });
    s = await ex.flowSnapshot({ groups: 1000 });
    expect(s.queues.find((q) => q.queue === queue)).toMatchObject({ concurrencyLimit: null, rateLimit: null, keyed: true });
    expect(s.weights.find((w) => w.tenantId === `t-${queue}`)).toBeUndefined();
    // Not keyed: lifting its limits drops the row, and the plain claims take the queue again.
    const plain = fresh();
    await ex.flowSetQueue({ queue: plain, concurrencyLimit: 1, rateLimit: null });
    expect(await ex.flowListControlled({ queues: [plain] })).toEqual(new Set([plain]));
    await ex.flowSetQueue({ queue: plain, concurrencyLimit: null, rateLimit: null });
    expect(await ex.flowListControlled({ queues: [plain] })).toEqual(new Set());
  });
});
