// Named queries of job dependencies (migration 0016): the enqueue of a job that waits for others.
// The release of dependents is not here: a trigger runs it inside every statement that finishes a
// parent, so it shares that statement's lease fence and transaction.

import { statementName } from './statement-name.ts';

export function dependencyQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  return {
    // The named parents of the dependents' tenant, locked (in id order, so two enqueues cannot
    // deadlock) until the enqueue commits: a parent cannot finish between the read of its state
    // and the edge written for it, and one that finished before is read finished.
    lockParents: {
      name: statementName(schema, `dep_lock_parents`),
      text: `SELECT id::text, state FROM ${jobs} WHERE id = ANY ($1::bigint[]) AND tenant_id = $2
        ORDER BY id FOR NO KEY UPDATE`,
    },
    // One job and its edges to the parents that have not succeeded ($11): waiting while there is
    // any, else pending. Each such parent is marked (has_dependents), which arms its trigger. A
    // duplicate idempotency key inserts nothing (no edge, no mark) and is read back by the caller.
    insert: {
      name: statementName(schema, `dep_insert`),
      text: `WITH ins AS (
          INSERT INTO ${jobs} (tenant_id, queue, job_type, payload, priority, run_at, max_attempts, idempotency_key,
            trace_context, state, depends_on, waiting_for, concurrency_key, concurrency_limit)
          VALUES ($1, $2, $3, $4::jsonb, $5, COALESCE($6::timestamptz, now() + make_interval(secs => COALESCE($7::double precision, 0) / 1000.0)),
            $8, $9, $10::jsonb,
            CASE WHEN cardinality($11::bigint[]) > 0 THEN 'waiting' ELSE 'pending' END,
            $12::bigint[], CASE WHEN cardinality($11::bigint[]) > 0 THEN cardinality($11::bigint[]) END, $15, $16)
          ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
          RETURNING *
        ), edges AS (
          INSERT INTO ${schema}.job_dependencies (parent_id, child_id, on_parent_failure, channel)
          SELECT p, ins.id, $13, $14 FROM ins CROSS JOIN unnest($11::bigint[]) AS p
        ), marked AS (
          UPDATE ${jobs} SET has_dependents = true
          WHERE id = ANY ($11::bigint[]) AND NOT has_dependents AND EXISTS (SELECT 1 FROM ins)
        )
        SELECT * FROM ins`,
    },
    // Parents that had already failed when their dependent was enqueued: their edges (only the new
    // ones: a parent's older edges were released when it finished) are released now, as the
    // trigger would have, cancelling the dependent or counting the parent as done.
    releaseFinished: {
      name: statementName(schema, `dep_release_finished`),
      text: `SELECT ${schema}.release_dependents(p, s) FROM unnest($1::bigint[], $2::text[]) AS x(p, s)`,
    },
  } as const;
}

export type DependencyQueries = ReturnType<typeof dependencyQueries>;
