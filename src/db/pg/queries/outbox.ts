// Named queries for the outbox table. The claim takes due rows with SKIP LOCKED, holds back
// every message of an ordering key behind an older pending one, and spends an attempt; the
// outcome writes are fenced by (id, attempt, state = 'pending').

import { leaderFenceSql } from './leader.ts';

export function outboxQueries(schema: string) {
  const t = `${schema}.outbox`;
  const dead = (cond: string) => `CASE WHEN ${cond} THEN 'dead_lettered' ELSE 'pending' END`;
  return {
    // $1 jsonb array of messages, $2 advisory-lock namespace, $3 NOTIFY channel. The locks are
    // taken (in key order, so two producers cannot deadlock) before any row gets its id.
    insertMany: {
      name: `${schema}.outbox_insert_many`,
      text: `WITH input AS (
          SELECT x.*, a.ord FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS a(elem, ord)
          CROSS JOIN LATERAL jsonb_to_record(a.elem) AS x(tenant_id text, destination text, topic text, payload jsonb,
            headers jsonb, message_key text, ordering_key text, max_attempts integer)),
        locked AS (
          SELECT count(pg_advisory_xact_lock($2::int, hashtext(k))) AS n FROM (
            SELECT DISTINCT i.tenant_id || '/' || i.destination || '/' || i.ordering_key AS k
            FROM input i WHERE i.ordering_key IS NOT NULL ORDER BY 1) z),
        ins AS (
          INSERT INTO ${t} (tenant_id, destination, topic, payload, headers, message_key, ordering_key, max_attempts)
          SELECT i.tenant_id, i.destination, i.topic, COALESCE(i.payload, 'null'::jsonb), COALESCE(i.headers, '{}'::jsonb),
                 i.message_key, i.ordering_key, i.max_attempts
          FROM input i CROSS JOIN locked WHERE locked.n >= 0
          ORDER BY i.ord
          ON CONFLICT (tenant_id, destination, message_key) DO NOTHING
          RETURNING *),
        notified AS (SELECT pg_notify($3, '') WHERE EXISTS (SELECT 1 FROM ins))
        SELECT * FROM ins WHERE (SELECT count(*) FROM notified) >= 0`,
    },
    selectByKeys: {
      name: `${schema}.outbox_select_by_keys`,
      text: `SELECT o.* FROM ${t} o
        JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(tenant_id, destination, message_key)
          ON o.tenant_id = k.tenant_id AND o.destination = k.destination AND o.message_key = k.message_key`,
    },
    // $1 destinations, $2 limit, $3 visibility ms. A message whose last claim lapsed with no
    // attempt left is dead-lettered here (its relay died mid-publish every time).
    claim: {
      name: `${schema}.outbox_claim`,
      text: `WITH due AS (
          SELECT o.id FROM ${t} o
          WHERE o.state = 'pending' AND o.next_attempt_at <= now() AND o.destination = ANY($1::text[])
            AND (o.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM ${t} p
              WHERE p.state = 'pending' AND p.ordering_key IS NOT NULL AND p.tenant_id = o.tenant_id
                AND p.destination = o.destination AND p.ordering_key = o.ordering_key AND p.id < o.id))
          ORDER BY o.next_attempt_at, o.id
          LIMIT $2
          FOR UPDATE OF o SKIP LOCKED)
        UPDATE ${t} o SET
          state = ${dead('o.attempt >= o.max_attempts')},
          dead_letter_reason = CASE WHEN o.attempt >= o.max_attempts THEN 'attempts_exhausted' END,
          finished_at = CASE WHEN o.attempt >= o.max_attempts THEN now() END,
          attempt = CASE WHEN o.attempt >= o.max_attempts THEN o.attempt ELSE o.attempt + 1 END,
          next_attempt_at = CASE WHEN o.attempt >= o.max_attempts THEN o.next_attempt_at
                                 ELSE now() + make_interval(secs => $3::double precision / 1000.0) END,
          updated_at = now()
        FROM due WHERE o.id = due.id
        RETURNING o.*`,
    },
    publishedMany: {
      name: `${schema}.outbox_published_many`,
      text: `UPDATE ${t} o SET state = 'published', finished_at = now(), updated_at = now(), last_error = NULL
        FROM unnest($1::bigint[], $2::integer[], $3::integer[]) AS x(id, attempt, replays)
        WHERE o.id = x.id AND o.attempt = x.attempt AND o.replay_count = x.replays AND o.state = 'pending'
        RETURNING o.id::text`,
    },
    // Full-jitter backoff: random() * min(cap, base * 2^(attempt-1)), never sooner than a
    // Retry-After the destination gave (the relay bounds it). $3 base ms, $4 cap ms.
    failMany: {
      name: `${schema}.outbox_fail_many`,
      text: `UPDATE ${t} o SET
          state = ${dead('x.reject OR o.attempt >= o.max_attempts')},
          dead_letter_reason = CASE WHEN x.reject THEN 'rejected' WHEN o.attempt >= o.max_attempts THEN 'attempts_exhausted' END,
          finished_at = CASE WHEN x.reject OR o.attempt >= o.max_attempts THEN now() END,
          next_attempt_at = CASE WHEN x.reject OR o.attempt >= o.max_attempts THEN o.next_attempt_at
            ELSE now() + make_interval(secs => greatest(
              COALESCE(x.retry_after_ms, 0),
              random() * least($4::double precision, $3::double precision * power(2::double precision, o.attempt - 1))) / 1000.0) END,
          last_error = x.error || jsonb_build_object('at', now()),
          updated_at = now()
        FROM unnest($1::bigint[], $2::integer[], $5::jsonb[], $6::boolean[], $7::double precision[], $8::integer[])
          AS x(id, attempt, error, reject, retry_after_ms, replays)
        WHERE o.id = x.id AND o.attempt = x.attempt AND o.replay_count = x.replays AND o.state = 'pending'
        RETURNING o.id::text, o.state`,
    },
    get: { text: `SELECT * FROM ${t} WHERE id = $1` },
    // For one tenant: another tenant's message is not read at all (docs/security.md).
    getInTenant: { text: `SELECT * FROM ${t} WHERE id = $1 AND tenant_id = $2` },
    list: {
      text: `SELECT * FROM ${t}
        WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR destination = $2) AND ($3::text IS NULL OR tenant_id = $3)
        ORDER BY id DESC LIMIT $4 OFFSET $5`,
    },
    // Any finished message may be published again (a consumer lost it); a pending one may not.
    replay: {
      text: `UPDATE ${t} SET state = 'pending', attempt = 0, next_attempt_at = now(), dead_letter_reason = NULL,
          finished_at = NULL, replay_count = replay_count + 1, updated_at = now()
        WHERE id = $1 AND state <> 'pending'
        RETURNING *`,
    },
    replayDeadLetters: {
      text: `WITH pick AS (
          SELECT id FROM ${t}
          WHERE state = 'dead_lettered' AND ($2::text IS NULL OR destination = $2) AND ($3::text IS NULL OR tenant_id = $3)
          ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
        UPDATE ${t} o SET state = 'pending', attempt = 0, next_attempt_at = now(), dead_letter_reason = NULL,
          finished_at = NULL, replay_count = o.replay_count + 1, updated_at = now()
        FROM pick WHERE o.id = pick.id
        RETURNING o.*`,
    },
    stats: {
      name: `${schema}.outbox_stats`,
      text: `SELECT
          (SELECT COALESCE(jsonb_agg(jsonb_build_object('destination', destination, 'state', state, 'n', n)
                    ORDER BY destination, state), '[]'::jsonb)
             FROM (SELECT destination, state, count(*)::int AS n FROM ${t}
                   WHERE $1::text IS NULL OR tenant_id = $1 GROUP BY destination, state) c) AS counts,
          (SELECT extract(epoch FROM now() - created_at)::float8 FROM ${t}
             WHERE state = 'pending' AND ($1::text IS NULL OR tenant_id = $1) ORDER BY id LIMIT 1) AS oldest`,
    },
    // Retention, on the leader: nothing unless epoch $4 holds the leader lease (queries/leader.ts).
    purge: {
      name: `${schema}.outbox_purge`,
      text: `WITH fence AS (${leaderFenceSql(schema, '$4')}),
        d AS (
          SELECT id FROM ${t}
          WHERE state = $1 AND finished_at < now() - make_interval(secs => $2::double precision / 1000.0)
            AND EXISTS (SELECT 1 FROM fence)
          ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
        DELETE FROM ${t} o USING d WHERE o.id = d.id`,
    },
  };
}
export type OutboxQueries = ReturnType<typeof outboxQueries>;
