// Flow control's claim statements (migration 0015): the plain, one-tenant and fair claims of a
// queue without flow control, the flow-controlled claim (caps and rate limits), and the reads and
// writes that route a queue to one of them. Shared SQL is in flow-fragments.ts.
//
// Caps are counted, not kept: the number of a key's (or queue's) live leases is read from the
// jobs table in a statement that starts after the claimer took the key's (queue's) lock, so it
// sees every claim committed before and no claim can commit in between. A job that finishes, is
// released or reaped leaves the count by leaving its live state: nothing to decrement, nothing
// that drifts, and a dead worker's slots come back with its leases.

import { cursorColumns, distinctFrom, fairPick, keyLimit, LIVE, refill } from './flow-control-fragments.ts';
import { bySize, claimLimit, claimUpdateSql, fifoClaimSql, gateProbe } from './job-fragments.ts';
import { statementName } from './statement-name.ts';

/** How long a controlled claim waits for a queue's or key's lock before trying again later. */
export const FLOW_LOCK_WAIT_MS = 100;

/** Tenants (or keys) walked per claim at most, besides the claim's own limit. */
export const FLOW_KEYS_PER_CLAIM = 64;

export function flowClaimQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  const notControlled = `NOT ${gateProbe(schema, 'closed')}`;
  // Whether queue $1 has one tenant (or none) with pending unkeyed jobs, as CTEs `top` (the last
  // tenant) and `solo` (column one): two index probes, the second backwards from the first, so
  // neither walks the entries of claimed jobs at the front of the index.
  const soloProbe = `top AS MATERIALIZED (
          SELECT tenant_id FROM ${jobs}
          WHERE state = 'pending' AND concurrency_key IS NULL AND queue = $1 ORDER BY tenant_id DESC LIMIT 1
        ), solo AS MATERIALIZED (
          SELECT (SELECT tenant_id FROM ${jobs}
            WHERE state = 'pending' AND concurrency_key IS NULL AND queue = $1 AND tenant_id < (SELECT tenant_id FROM top)
            ORDER BY tenant_id DESC LIMIT 1) IS NULL AS one
        )`;
  // The one tenant's due jobs in claim order, up to $2, only when `solo` says there is one.
  // `n`: the limit in the text (claimLimit).
  const soloPick = (n?: number) => {
    const { limit, check } = claimLimit(n);
    return `${jobs}
          WHERE (SELECT one FROM solo) AND state = 'pending' AND concurrency_key IS NULL AND queue = $1${check}
            AND tenant_id = (SELECT tenant_id FROM top) AND run_at <= now() AND ${notControlled}
          ORDER BY priority DESC, run_at, id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED`;
  };
  return {
    // The fair claim of a queue without flow control. $1 queue, $2 limit, $3 owner, $4 into
    // running, $5 lease ms, $6 cursor tenant, $7 its slice used. Answers ClaimRow columns and the
    // next cursor on every row, then one last row with a NULL id whose column `solo` says the
    // queue had one tenant (or none) with pending jobs.
    // A queue with one tenant (most queues: every job of the default tenant) is claimed in plain
    // claim order, as the FIFO claim does: round-robin over one tenant is that order anyway, and
    // the walk over tenants, the per-tenant subquery and the window cost a drain about a fifth
    // of its worker CPU. One tenant is two index probes: the last tenant of the queue, then no
    // tenant below it (probed backwards from it, so neither walks the entries of claimed jobs
    // at the front of the index). Both branches are gated by that answer (one-time filters), so
    // only one of them runs. A tenant whose first job arrives between the probes and the pick
    // waits for the next claim.
    // By the number of jobs asked for, as the plain claim (bySize): the budget and the pick's
    // LIMIT carry it in the text.
    claimFair: bySize((n?: number) => {
      const budget = n === undefined ? '$2' : String(n);
      return {
        name: statementName(schema, `flow_claim_fair${n === undefined ? '' : `_${n}`}`),
        rowMode: 'array' as const,
        text: `WITH RECURSIVE ${soloProbe}, one_tenant AS (
          SELECT id, tenant_id, 0 AS rnd, 1 AS pos, 0 AS k, 0 AS used FROM ${soloPick(n)}
        ), ${fairPick(schema, budget, '$6::text', '$7::int')},
        picked AS (
          SELECT * FROM one_tenant
          UNION ALL
          (SELECT * FROM fair WHERE NOT (SELECT one FROM solo) AND ${notControlled} ORDER BY rnd, pos, k LIMIT ${budget})
        ), claimed AS (
          ${claimUpdateSql(schema, 'picked')}
        )
        SELECT c.*, ${cursorColumns('picked')}, NULL::boolean AS solo FROM claimed c
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
          (SELECT one FROM solo)`,
      };
    }),

    // The claim of a queue that has never held a job of a tenant other than 'default' (no row in
    // tenant_queues, migration 0023): one tenant by construction, so the FIFO claim's statement,
    // its probe of the gates reading every reason (one index probe, migration 0032), by the
    // number of jobs asked for (bySize: one plan per connection for small claims). $1-$5 as the claim; answers ClaimRow columns. It says nothing of
    // the mark: a claim that took nothing asks `tenanted` (an extra answer row would need a
    // CTE around the update, which every claim would pay for). A mark committed after this
    // statement's snapshot came with jobs the snapshot does not see either.
    claimPlain: bySize((n?: number) => ({
      name: statementName(schema, `flow_claim_plain${n === undefined ? '' : `_${n}`}`),
      rowMode: 'array' as const,
      text: fifoClaimSql(schema, ' AND concurrency_key IS NULL', n, 'any'),
    })),
    // Whether queue $1 has held a job of a tenant other than 'default' (its gate follows tenant_queues).
    tenanted: {
      name: statementName(schema, `flow_tenanted`),
      text: `SELECT EXISTS (SELECT 1 FROM ${schema}.queue_gates WHERE queue = $1 AND reason = 'tenanted') AS tenanted`,
    },

    // The claim of a queue last seen with one tenant: the fair claim's one-tenant branch alone,
    // a statement as small as the FIFO claim (the fair claim's plan, even with its walk gated
    // off, costs a claim of a few jobs about as much again to set up and tear down). $1-$5 as the
    // claim. Answers ClaimRow columns, then one last row with a NULL id whose column `solo` says
    // whether the queue still had one tenant: when not, it took nothing and the fair claim follows.
    // By the number of jobs asked for, as the plain claim.
    claimSolo: bySize((n?: number) => ({
      name: statementName(schema, `flow_claim_solo${n === undefined ? '' : `_${n}`}`),
      rowMode: 'array' as const,
      text: `WITH ${soloProbe}, picked AS (SELECT id FROM ${soloPick(n)}), claimed AS (
          ${claimUpdateSql(schema, 'picked')}
        )
        SELECT c.*, NULL::boolean AS solo FROM claimed c
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (SELECT one FROM solo)`,
    })),

    // Where a fair claim's walk of tenants ends: the last of up to $3 tenants with pending
    // unkeyed jobs in queue $1 from cursor $2 (inclusive, wrapping around), and how many it saw.
    // A fair claim that took nothing may have walked only tenants whose jobs are all in the
    // future; the next walk starts there, so due jobs further on are reached.
    fairWalkEnd: {
      name: statementName(schema, `flow_fair_walk_end`),
      text: `WITH RECURSIVE ${distinctFrom(jobs, 'tenant_id', 'concurrency_key IS NULL', '$2::text', '$3::int')},
        walked AS (SELECT * FROM hi WHERE v IS NOT NULL UNION ALL SELECT * FROM lo WHERE v IS NOT NULL)
        SELECT (SELECT v FROM walked ORDER BY pos DESC LIMIT 1) AS last,
          -- A paused or controlled queue took nothing for that reason: no walk onwards.
          CASE WHEN ${notControlled} THEN (SELECT count(*) FROM walked)::int ELSE 0 END AS n`,
    },

    // The flow-controlled claim, first statement (in the claim's transaction): takes the
    // queue's row lock when it has a cap or a rate limit, and the advisory lock of every key
    // with a limit among the first keys of the queue's keyed pending jobs (from cursor $2, at
    // most $3 keys), in one global order so claimers cannot deadlock. Answers the keys with
    // their limits. The second statement starts after these locks are held.
    flowLock: {
      name: statementName(schema, `flow_lock`),
      text: `WITH RECURSIVE q AS (
          SELECT queue FROM ${schema}.flow_queues
          WHERE queue = $1 AND (concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL)
          FOR UPDATE
        ), ${distinctFrom(jobs, 'concurrency_key', 'concurrency_key IS NOT NULL', '$2::text', '$3::int')},
        shaped AS (
          SELECT x.v AS key, x.pos,
            COALESCE((SELECT concurrency_limit FROM ${jobs} WHERE state = 'pending' AND concurrency_key IS NOT NULL
                        AND queue = $1 AND concurrency_key = x.v ORDER BY priority DESC, run_at, id LIMIT 1),
                     ${keyLimit(schema, 'x.v', 'concurrency_limit', 'concurrency_limit')}) AS cap,
            ${keyLimit(schema, 'x.v', 'rate_limit', 'rate_limit')} AS rate,
            ${keyLimit(schema, 'x.v', 'rate_limit', 'rate_period_ms')} AS period
          FROM (SELECT * FROM hi UNION ALL SELECT * FROM lo) x WHERE x.v IS NOT NULL
        ), locked AS (
          SELECT key, pg_advisory_xact_lock(hashtextextended('baton.flow.key:' || key, 0)) AS l FROM (
            SELECT key FROM shaped WHERE cap IS NOT NULL OR rate IS NOT NULL
            ORDER BY hashtextextended('baton.flow.key:' || key, 0)) o
        )
        SELECT s.key, s.cap, s.rate, s.period FROM shaped s
        WHERE (SELECT count(*) FROM q) >= 0 AND (SELECT count(l) FROM locked) >= 0 ORDER BY s.pos`,
    },

    // The flow-controlled claim, second statement: counts live leases (queue, keys) and refills
    // buckets under the locks the first statement took, picks within every allowance (unkeyed
    // jobs fair or FIFO, keyed jobs per key as lanes of the round-robin), claims, and spends
    // tokens. $1-$5 as the claim, $6 fair, $7 cursor tenant, $8 its slice used, $9-$12 keys and
    // their cap, rate and period (from flowLock). Answers ClaimRow columns, the cursor, and a
    // last row with a NULL id: when (ms) a rate-limited bucket next has a token (NULL: none is
    // empty), and whether a limit bound this claim (so more jobs may wait behind it).
    // Leases run from this statement's clock, not the transaction's start: the lock statement
    // before it (and any wait for a lock) does not spend them, and the claimer counts them
    // proven from when it sent this statement.
    flowClaim: {
      name: statementName(schema, `flow_claim`),
      rowMode: 'array' as const,
      text: `WITH RECURSIVE clock AS MATERIALIZED (SELECT clock_timestamp() AS t), qcfg AS (
          SELECT concurrency_limit, rate_limit, rate_period_ms, tokens, refilled_at FROM ${schema}.flow_queues WHERE queue = $1
        ), qlive AS (
          SELECT count(*)::int AS n FROM ${jobs}
          WHERE (SELECT concurrency_limit FROM qcfg) IS NOT NULL
            AND lease_expires_at IS NOT NULL AND state IN ${LIVE} AND queue = $1
        ), qtok AS (
          SELECT ${refill('tokens', 'refilled_at', 'rate_limit', 'rate_period_ms', '(SELECT t FROM clock)')} AS t, rate_limit, rate_period_ms
          FROM qcfg WHERE rate_limit IS NOT NULL
        ), budget AS (
          SELECT CASE WHEN EXISTS (SELECT 1 FROM ${schema}.paused_queues WHERE queue = $1) THEN 0 ELSE
            greatest(0, least($2,
              COALESCE((SELECT concurrency_limit FROM qcfg) - (SELECT n FROM qlive), $2),
              COALESCE((SELECT floor(t)::int FROM qtok), $2))) END AS b
        ), kcfg AS (
          SELECT k.key, k.pos, k.cap, k.rate, k.period, b.tokens, b.refilled_at
          FROM unnest($9::text[], $10::int[], $11::int[], $12::int[]) WITH ORDINALITY AS k(key, cap, rate, period, pos)
          LEFT JOIN ${schema}.flow_buckets b ON b.key = k.key
        ), kstate AS (
          SELECT key, pos, cap, rate, period,
            CASE WHEN cap IS NOT NULL THEN (SELECT count(*)::int FROM ${jobs} j
              WHERE j.state IN ${LIVE} AND j.concurrency_key IS NOT NULL AND j.concurrency_key = kcfg.key) END AS live,
            CASE WHEN rate IS NOT NULL THEN ${refill('tokens', 'refilled_at', 'rate', 'period', '(SELECT t FROM clock)')} END AS tok
          FROM kcfg
        ), kallow AS (
          SELECT key, pos, greatest(0, least((SELECT b FROM budget), COALESCE(cap - live, $2), COALESCE(floor(tok)::int, $2))) AS allow
          FROM kstate
        ), ${fairPick(schema, '(SELECT b FROM budget)', '$7::text', '$8::int')},
        fifo AS (
          SELECT id, tenant_id, 0 AS rnd, 0 AS pos, (row_number() OVER ())::int AS k, 0 AS used FROM (
            SELECT id, tenant_id FROM ${jobs}
            WHERE NOT $6::boolean AND state = 'pending' AND queue = $1 AND run_at <= now() AND concurrency_key IS NULL
            ORDER BY priority DESC, run_at, id
            LIMIT (SELECT b FROM budget)
            FOR UPDATE SKIP LOCKED) f
        ), keyed AS (
          SELECT c.id, NULL::text AS tenant_id, c.k AS rnd, 1000000 + ka.pos AS pos, c.k, 0 AS used, ka.key
          FROM kallow ka CROSS JOIN LATERAL (
            SELECT l.id, (row_number() OVER ())::int - 1 AS k FROM (
              SELECT id FROM ${jobs}
              WHERE state = 'pending' AND concurrency_key IS NOT NULL AND queue = $1 AND concurrency_key = ka.key
                AND run_at <= now()
              ORDER BY priority DESC, run_at, id
              LIMIT ka.allow
              FOR UPDATE SKIP LOCKED) l
          ) c WHERE ka.allow > 0
        ), picked AS (
          SELECT * FROM (
            SELECT id, tenant_id, rnd, pos, k, used, NULL::text AS key FROM fair WHERE $6::boolean
            UNION ALL SELECT id, tenant_id, rnd, pos, k, used, NULL FROM fifo
            UNION ALL SELECT id, tenant_id, rnd, pos, k, used, key FROM keyed
          ) a ORDER BY rnd, pos, k LIMIT (SELECT b FROM budget)
        ), claimed AS (
          ${claimUpdateSql(schema, 'picked', '(SELECT t FROM clock)')}
        ), spent_queue AS (
          UPDATE ${schema}.flow_queues SET tokens = (SELECT t FROM qtok) - (SELECT count(*) FROM claimed),
            refilled_at = greatest(refilled_at, (SELECT t FROM clock))
          WHERE queue = $1 AND rate_limit IS NOT NULL AND EXISTS (SELECT 1 FROM qtok)
          RETURNING 1
        ), spent_keys AS (
          INSERT INTO ${schema}.flow_buckets AS b (key, tokens, refilled_at)
          SELECT s.key, s.tok - (SELECT count(*) FROM picked p WHERE p.key = s.key), (SELECT t FROM clock)
          FROM kstate s WHERE s.rate IS NOT NULL
          ORDER BY s.key
          ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, refilled_at = greatest(b.refilled_at, excluded.refilled_at)
          RETURNING 1
        ), waiting AS (
          SELECT least(
              (SELECT CASE WHEN t - (SELECT count(*) FROM claimed) < 1
                 THEN (1 - (t - (SELECT count(*) FROM claimed))) * rate_period_ms / rate_limit END FROM qtok),
              (SELECT min(CASE WHEN s.tok - (SELECT count(*) FROM picked p WHERE p.key = s.key) < 1
                 THEN (1 - (s.tok - (SELECT count(*) FROM picked p WHERE p.key = s.key))) * s.period / s.rate END)
               FROM kstate s WHERE s.rate IS NOT NULL)) AS wake_ms,
            -- A limit bound the claim if it is spent once this claim's jobs are counted: a
            -- claim that filled a cap's last slot must say so, or its worker would take the
            -- queue for drained and wait for a poll while the cap's slots free.
            (SELECT b FROM budget) < $2 OR EXISTS (SELECT 1 FROM kstate s, LATERAL (
                SELECT count(*)::int AS n FROM picked p WHERE p.key = s.key) t
              WHERE (s.cap IS NOT NULL AND s.live + t.n >= s.cap) OR (s.rate IS NOT NULL AND s.tok - t.n < 1)) AS limited
        )
        SELECT c.*, ${cursorColumns('(SELECT p.* FROM picked p WHERE p.tenant_id IS NOT NULL) pt')}, NULL::float8 AS wake_ms,
          NULL::boolean AS limited
        FROM claimed c
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
          w.wake_ms, w.limited
        FROM waiting w WHERE (SELECT count(*) FROM spent_queue) + (SELECT count(*) FROM spent_keys) >= 0`,
    },

    // The controlled claim's transaction: $1 ms of lock wait at most, and $2 ms idle inside it
    // before the server ends the session (a stalled process must not hold a queue's lock).
    claimTimeouts: {
      text: `SELECT set_config('lock_timeout', $1::int || 'ms', true), set_config('idle_in_transaction_session_timeout', $2::int || 'ms', true)`,
    },
    // Whether each of $1 (queues) is flow-controlled (has a flow_queues row).
    controlled: {
      name: statementName(schema, `flow_controlled`),
      text: `SELECT queue FROM ${schema}.flow_queues WHERE queue = ANY ($1::text[])`,
    },
    // A keyed job is about to be enqueued in each of $1: those queues become controlled first
    // (committed before the jobs, so no FIFO or fair claim ever sees a keyed job).
    markKeyed: {
      name: statementName(schema, `flow_mark_keyed`),
      text: `INSERT INTO ${schema}.flow_queues AS f (queue, keyed)
        SELECT q, true FROM unnest($1::text[]) AS q
        WHERE NOT EXISTS (SELECT 1 FROM ${schema}.flow_queues g WHERE g.queue = q AND g.keyed)
        ORDER BY q
        ON CONFLICT (queue) DO UPDATE SET keyed = true, updated_at = now()`,
    },
  } as const;
}
