// Flow control's side of the executor: the fair claim (with its walk past tenants that hold only
// future jobs), the flow-controlled claim (caps and rate limits, in one short transaction that
// gives up on a busy lock rather than wait), and the admin reads and writes of limits and
// weights. Every lease it hands out is written by the claim statement itself (see
// queries/flow-claim.ts).

import type { FlowClaimParams, FlowClaimResult } from '../../driver/executor.ts';
import type { FlowLimits, FlowSnapshot } from '../../types/flow-control.ts';
import { type ClaimRow, claimJobs } from './claim.ts';
import { translatePgError } from './errors.ts';
import { checkOut, type PgPoolLike, type QueryConfigLike } from './pool.ts';
import type { FlowQueries } from './queries/flow-control.ts';
import { FLOW_KEYS_PER_CLAIM, FLOW_LOCK_WAIT_MS } from './queries/flow-control-claim.ts';
import { queryRows } from './query-rows.ts';

/** The answer of a claim that took jobs in claim order (one tenant): no slice bound it. */
function inClaimOrder(rows: unknown[], p: FlowClaimParams, plain: boolean): FlowClaimResult {
  return {
    jobs: claimJobs(rows as ClaimRow[], p),
    cursor: p.cursor,
    keyCursor: p.keyCursor,
    wakeMs: null,
    limited: false,
    sliced: false,
    solo: true,
    plain,
  };
}

export class PgFlow {
  readonly #pool: PgPoolLike;
  readonly #sql: FlowQueries;

  constructor(pool: PgPoolLike, sql: FlowQueries) {
    this.#pool = pool;
    this.#sql = sql;
  }

  #rows<R>(query: QueryConfigLike, values: unknown[]): Promise<R[]> {
    return queryRows<R>(this.#pool, query, values);
  }

  async claim(p: FlowClaimParams): Promise<FlowClaimResult> {
    const base = [p.queue, p.limit, p.owner, p.intoRunning, p.leaseMs];
    if (!p.controlled) {
      if (p.plain !== false) {
        // Never seen to hold another tenant's job: the FIFO pick, unless a mark has appeared.
        const rows = await this.#rows<unknown[]>(this.#sql.claimPlain(p.limit), base);
        if (rows.length > 0) return inClaimOrder(rows, p, true);
        const [mark] = await this.#rows<{ tenanted: boolean }>(this.#sql.tenanted, [p.queue]);
        if (mark?.tenanted !== true) return inClaimOrder(rows, p, true);
      }
      if (p.solo) {
        // Last seen with one tenant: the small statement, unless a second tenant has arrived.
        const rows = await this.#rows<unknown[]>(this.#sql.claimSolo(p.limit), base);
        const meta = rows.pop() as unknown[] | Record<string, unknown> | undefined;
        if ((Array.isArray(meta) ? meta[16] : meta?.solo) === true) return inClaimOrder(rows, p, false);
      }
      let cursor = p.cursor;
      for (let step = 0; ; step++) {
        const rows = await this.#rows<unknown[]>(this.#sql.claimFair(p.limit), [...base, cursor.tenant, cursor.used]);
        // The last row says whether the queue had one tenant: then the claim took jobs in claim
        // order up to its limit, and there is no walk to go on with.
        const meta = rows.pop() as unknown[] | Record<string, unknown> | undefined;
        const solo = (Array.isArray(meta) ? meta[18] : meta?.solo) === true;
        const answer = flowAnswer(rows, { ...p, cursor });
        const done = { ...answer, keyCursor: p.keyCursor, wakeMs: null, limited: false, sliced: !solo, solo, plain: false };
        if (solo || answer.jobs.length > 0 || step === FAIR_WALK_STEPS_MAX) return done;
        // Nothing taken: the walk may have seen only tenants whose jobs are all in the future.
        // Unless it saw every tenant of the queue, go on from where it ended.
        const [end] = await this.#rows<{ last: string | null; n: number }>(this.#sql.fairWalkEnd, [p.queue, cursor.tenant, p.limit + 1]);
        if (!end || end.last === null || end.n < p.limit + 1 || end.last === cursor.tenant) return done;
        cursor = { tenant: end.last, used: 0 };
      }
    }
    // Two statements in one transaction: the second one's snapshot starts after the first one's
    // locks are held, so its counts of live leases see every claim that could compete.
    const out = await checkOut(this.#pool);
    let ok = false;
    try {
      await out.client.query({ text: 'BEGIN' });
      // A claimer waits for a lock briefly, then tries again later, rather than hold a pool
      // connection; and one whose process stalls inside the transaction loses its session, and
      // its locks, after a lease length.
      await out.client.query({ ...this.#sql.claimTimeouts, values: [FLOW_LOCK_WAIT_MS, Math.max(1_000, p.leaseMs)] });
      const keys = (
        await out.client.query<{ key: string; cap: number | null; rate: number | null; period: number | null }>({
          ...this.#sql.flowLock,
          values: [p.queue, p.keyCursor, FLOW_KEYS_PER_CLAIM],
        })
      ).rows;
      p.onLeaseStatement?.();
      const res = await out.client.query<unknown[]>({
        ...this.#sql.flowClaim,
        values: [
          ...base,
          p.fair,
          p.cursor.tenant,
          p.cursor.used,
          keys.map((k) => k.key),
          keys.map((k) => k.cap),
          keys.map((k) => k.rate),
          keys.map((k) => k.period),
        ],
      });
      await out.client.query({ text: 'COMMIT' });
      ok = true;
      const last = res.rows.pop() as unknown[] | Record<string, unknown> | undefined;
      const [wakeMs, limited] = Array.isArray(last) ? [last[18], last[19]] : [last?.wake_ms, last?.limited];
      // The walk over keys goes on from where it stopped when it reached its bound.
      const keyCursor = keys.length >= FLOW_KEYS_PER_CLAIM ? (keys.at(-1)?.key ?? '') : '';
      return {
        ...flowAnswer(res.rows, p),
        keyCursor,
        wakeMs: wakeMs == null ? null : Number(wakeMs),
        limited: limited === true,
        sliced: p.fair,
        solo: false,
        plain: p.plain ?? true,
      };
    } catch (err) {
      const busy = !ok && (err as { code?: string }).code === '55P03';
      if (!ok) await out.client.query({ text: 'ROLLBACK' }).catch(() => undefined);
      // lock_not_available: another claimer holds the queue's or a key's lock. Nothing was
      // claimed; claim again shortly (jittered, so waiting claimers do not line up).
      if (busy) {
        ok = true;
        return {
          jobs: [],
          cursor: p.cursor,
          keyCursor: p.keyCursor,
          wakeMs: FLOW_LOCK_WAIT_MS * (1 + Math.random()),
          limited: true,
          sliced: false,
          solo: false,
          plain: p.plain ?? true,
        };
      }
      throw translatePgError(err);
    } finally {
      out.release(!ok);
    }
  }

  async controlled(p: { queues: string[] }): Promise<Set<string>> {
    const rows = await this.#rows<{ queue: string }>(this.#sql.controlled, [p.queues]);
    return new Set(rows.map((r) => r.queue));
  }

  async setQueue(p: { queue: string } & FlowLimits): Promise<void> {
    await this.#rows(this.#sql.setQueue, [p.queue, p.concurrencyLimit, p.rateLimit?.limit ?? null, p.rateLimit?.periodMs ?? null]);
    if (p.concurrencyLimit === null && p.rateLimit === null) await this.#rows(this.#sql.dropQueueIfFree, [p.queue]);
  }

  async setKey(p: { pattern: string } & FlowLimits): Promise<void> {
    await this.#rows(this.#sql.setKey, [p.pattern, p.concurrencyLimit, p.rateLimit?.limit ?? null, p.rateLimit?.periodMs ?? null]);
  }

  async deleteKey(p: { pattern: string }): Promise<boolean> {
    return (await this.#rows(this.#sql.deleteKey, [p.pattern])).length > 0;
  }

  async setWeight(p: { tenantId: string; weight: number | null }): Promise<void> {
    if (p.weight === null) await this.#rows(this.#sql.deleteWeight, [p.tenantId]);
    else await this.#rows(this.#sql.setWeight, [p.tenantId, p.weight]);
  }

  async snapshot(p: { groups: number }): Promise<Omit<FlowSnapshot, 'held'>> {
    type Limits = { concurrency_limit: number | null; rate_limit: number | null; rate_period_ms: number | null };
    const limits = (r: Limits): FlowLimits => ({
      concurrencyLimit: r.concurrency_limit,
      rateLimit: r.rate_limit === null ? null : { limit: r.rate_limit, periodMs: r.rate_period_ms ?? 0 },
    });
    const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    const [queues, patterns, weights, tenants, keys] = await Promise.all([
      this.#rows<Limits & { queue: string; keyed: boolean; tokens: number | null; running: number; due: number }>(
        this.#sql.snapshotQueues,
        [],
      ),
      this.#rows<Limits & { pattern: string }>(this.#sql.snapshotKeys, []),
      this.#rows<{ tenant_id: string; weight: number }>(this.#sql.snapshotWeights, []),
      this.#rows<{ queue: string; tenant_id: string; pending: number; running: number }>(this.#sql.snapshotTenants, [p.groups]),
      this.#rows<{
        key: string;
        pending: number;
        due: number;
        running: number;
        cap: number | null;
        rate: number | null;
        tokens: number | null;
      }>(this.#sql.snapshotActiveKeys, [p.groups]),
    ]);
    return {
      queues: queues.map((r) => ({ queue: r.queue, ...limits(r), keyed: r.keyed, running: r.running, due: r.due, tokens: num(r.tokens) })),
      keyPatterns: patterns.map((r) => ({ pattern: r.pattern, ...limits(r) })),
      weights: weights.map((r) => ({ tenantId: r.tenant_id, weight: r.weight })),
      tenants: tenants.map((r) => ({ queue: r.queue, tenantId: r.tenant_id, pending: r.pending, running: r.running })),
      keys: keys.map((r) => ({
        key: r.key,
        pending: r.pending,
        due: r.due,
        running: r.running,
        concurrencyLimit: r.cap,
        rateLimit: r.rate,
        // No bucket row yet: a rate-limited key's bucket is full.
        tokens: r.rate === null ? null : (num(r.tokens) ?? r.rate),
      })),
    };
  }
}

/**
 * Walks past tenants with only future jobs that one fair claim makes at most, each as long as
 * the claim's limit plus one: the rest is left to the next claim, which starts where this ended.
 */
const FAIR_WALK_STEPS_MAX = 8;

/** A fair or flow claim's rows: the jobs, and the round-robin cursor the rows carry (columns 16, 17). */
function flowAnswer(rows: unknown[], p: FlowClaimParams): Pick<FlowClaimResult, 'jobs' | 'cursor'> {
  const first = rows[0] as unknown[] | Record<string, unknown> | undefined;
  const [tenant, used] = Array.isArray(first) ? [first[16], first[17]] : [first?.cursor_tenant, first?.cursor_used];
  const cursor = typeof tenant === 'string' && used != null ? { tenant, used: Number(used) } : p.cursor;
  return { jobs: claimJobs(rows as ClaimRow[], p), cursor };
}
