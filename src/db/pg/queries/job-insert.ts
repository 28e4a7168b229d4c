// The jobs table's inserts: a batch in one statement whatever its size, and the NOTIFY that
// wakes a queue's workers. A duplicate idempotency key inserts nothing: selectByKeys reads the
// job that holds it.

import { statementName } from './statement-name.ts';

export function jobInsertQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  // Inserts a batch in one statement. Rows are read from a jsonb array in input order;
  // a duplicate (tenant_id, idempotency_key) is skipped here and read back by selectByKeys.
  // run_at: an absolute time when given, else now() + delay_ms (database clock).
  const insertSql = `INSERT INTO ${jobs}
          (tenant_id, queue, job_type, payload, priority, run_at, max_attempts, idempotency_key, trace_context,
           concurrency_key, concurrency_limit)
        SELECT x.tenant_id, x.queue, x.job_type, COALESCE(x.payload, 'null'::jsonb), x.priority,
               COALESCE(x.run_at, now() + make_interval(secs => COALESCE(x.delay_ms, 0) / 1000.0)),
               x.max_attempts, x.idempotency_key, x.trace_context, x.concurrency_key, x.concurrency_limit
        FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS a(elem, ord)
        CROSS JOIN LATERAL jsonb_to_record(a.elem) AS x(
          tenant_id text, queue text, job_type text, payload jsonb, priority integer,
          run_at timestamptz, delay_ms double precision, max_attempts integer, idempotency_key text,
          trace_context jsonb, concurrency_key text, concurrency_limit integer)
        ORDER BY a.ord
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING *`;

  return {
    insertMany: { name: statementName(schema, `job_insert_many`), text: insertSql },
    // The same insert, plus pg_notify on the channels in $2 when a row was inserted: the
    // notification leaves with the commit of the caller's transaction.
    insertManyNotify: {
      name: statementName(schema, `job_insert_many_notify`),
      text: `WITH ins AS (${insertSql}),
        notified AS (SELECT pg_notify(c, '') FROM unnest($2::text[]) AS c WHERE EXISTS (SELECT 1 FROM ins))
        SELECT * FROM ins WHERE (SELECT count(*) FROM notified) >= 0`,
    },
    selectByKeys: {
      name: statementName(schema, `job_select_by_keys`),
      text: `SELECT j.* FROM ${jobs} j
        JOIN unnest($1::text[], $2::text[]) AS k(tenant_id, idempotency_key)
          ON j.tenant_id = k.tenant_id AND j.idempotency_key = k.idempotency_key`,
    },
    notify: {
      name: statementName(schema, `job_notify`),
      text: `SELECT pg_notify(c, '') FROM unnest($1::text[]) AS c`,
    },
  } as const;
}
