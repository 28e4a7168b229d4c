// Named queries for the outbox table. The claim takes due rows with SKIP LOCKED, holds back
// every message of an ordering key behind an older pending one, and spends an attempt; with
// each claimed head of a key it reads the key's run (the due messages after it, unclaimed: the
// head's claim holds the key). The outcome writes are fenced by (id, replay_count, attempt,
// state = 'pending'); a run message's write spends its attempt, so it is fenced the same way.

import { leaderFenceSql } from './leader.ts';
import { statementName } from './statement-name.ts';

export function outboxQueries(schema: string) {
  const t = `${schema}.outbox`;
  const dead = (cond: string) => `CASE WHEN ${cond} THEN 'dead_lettered' ELSE 'pending' END`;
  // The claim of the rows of a CTE `heads` (locked already), `limit` the batch, `vis` the
  // visibility ms; `runFilter` keeps rows out of the runs. A message whose last claim lapsed
  // with no attempt left is dead-lettered here (its relay died mid-publish every time).
  //
  // Runs: for each claimed head with an ordering key, the pending messages of its key after it,
  // in id order, while each is due and has an attempt left (a message that is not due may be in
  // flight elsewhere after a replay, or waiting for its retry: the run stops before it). They
  // are read, not claimed: no other claim can take them while the head is pending, since each
  // has an older pending message. The room the heads leave in the batch is shared out round
  // robin (every head's 2nd message, then every 3rd, ...), so one long key does not crowd out
  // the others.
  const claimHeads = (limit: string, vis: string, runFilter = 'true') => `claimed AS (
          UPDATE ${t} o SET
            state = ${dead('o.attempt >= o.max_attempts')},
            dead_letter_reason = CASE WHEN o.attempt >= o.max_attempts THEN 'attempts_exhausted' END,
            finished_at = CASE WHEN o.attempt >= o.max_attempts THEN now() END,
            attempt = CASE WHEN o.attempt >= o.max_attempts THEN o.attempt ELSE o.attempt + 1 END,
            next_attempt_at = CASE WHEN o.attempt >= o.max_attempts THEN o.next_attempt_at
                                   ELSE now() + make_interval(secs => ${vis}::double precision / 1000.0) END,
            updated_at = now()
          FROM heads WHERE o.id = heads.id
          RETURNING o.*),
        room AS (SELECT ${limit}::int - count(*)::int AS n FROM claimed),
        run AS (
          SELECT f.p, c.id AS run_of, row_number() OVER w AS run_pos,
            bool_and((f.p).next_attempt_at <= now() AND (f.p).attempt < (f.p).max_attempts) OVER w AS runnable
          FROM claimed c
          CROSS JOIN LATERAL (
            SELECT p FROM ${t} p
            WHERE p.state = 'pending' AND p.ordering_key IS NOT NULL AND p.tenant_id = c.tenant_id
              AND p.destination = c.destination AND p.ordering_key = c.ordering_key AND p.id > c.id AND ${runFilter}
            ORDER BY p.id
            LIMIT (SELECT n FROM room)) f
          WHERE c.state = 'pending' AND c.ordering_key IS NOT NULL
          WINDOW w AS (PARTITION BY c.id ORDER BY (f.p).id)),
        followers AS (SELECT * FROM run WHERE runnable ORDER BY run_pos, run_of LIMIT (SELECT n FROM room))`;
  // The heads (kind 'claimed'), then the runs (kind 'run', run_of = the head's id).
  const claimRows = `SELECT 'claimed' AS kind, NULL::text AS run_of, c.* FROM claimed c
        UNION ALL
        SELECT 'run', f.run_of::text, (f.p).* FROM followers f`;
  // Published, fenced by the claim's (replay_count, attempt); $4 run (see publishedMany). The
  // id = ANY($1) lets every plan find the batch by primary key (without statistics a hash join
  // with the unnest read every pending row).
  const published = `UPDATE ${t} o SET state = 'published', finished_at = now(), updated_at = now(), last_error = NULL,
          attempt = o.attempt + x.run::int
        FROM unnest($1::bigint[], $2::integer[], $3::integer[], $4::boolean[]) AS x(id, attempt, replays, run)
        WHERE o.id = ANY ($1::bigint[]) AND o.id = x.id AND o.attempt = x.attempt AND o.replay_count = x.replays
          AND o.state = 'pending'`;
  return {
    // $1 jsonb array of messages, $2 advisory-lock namespace, $3 NOTIFY channel. The locks are
    // taken (in key order, so two producers cannot deadlock) before any row gets its id.
    insertMany: {
      name: statementName(schema, `outbox_insert_many`),
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
      name: statementName(schema, `outbox_select_by_keys`),
      text: `SELECT o.* FROM ${t} o
        JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(tenant_id, destination, message_key)
          ON o.tenant_id = k.tenant_id AND o.destination = k.destination AND o.message_key = k.message_key`,
    },
    // $1 destinations, $2 limit, $3 visibility ms: the due heads, earliest first; see claimHeads.
    claim: {
      name: statementName(schema, `outbox_claim`),
      text: `WITH heads AS (
          SELECT o.id FROM ${t} o
          WHERE o.state = 'pending' AND o.next_attempt_at <= now() AND o.destination = ANY($1::text[])
            AND (o.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM ${t} p
              WHERE p.state = 'pending' AND p.ordering_key IS NOT NULL AND p.tenant_id = o.tenant_id
                AND p.destination = o.destination AND p.ordering_key = o.ordering_key AND p.id < o.id))
          ORDER BY o.next_attempt_at, o.id
          LIMIT $2
          FOR UPDATE OF o SKIP LOCKED),
        ${claimHeads('$2', '$3')}
        ${claimRows}`,
    },
    // $4: per item, true for a run message (published under its head's claim): its write spends
    // the attempt the claim of a head spends, and is fenced by the attempt it was read with.
    publishedMany: {
      name: statementName(schema, `outbox_published_many`),
      text: `${published} RETURNING o.id::text`,
    },
    // publishedMany, then in the same statement the claim of the next message of every key it
    // wrote a message of (the key's oldest pending message but for those just written: the
    // statement's snapshot still sees them pending), when due and not locked, with its run: the
    // key goes on without waiting for a claim, and without the claim's scan of the due messages.
    // A message of the key that was not written here (fenced, or failed and waiting for its
    // retry) is that oldest one, and stops the key as it would stop a claim. $5 limit, $6
    // visibility ms. Rows: kind 'written' (only id set), then the claim's rows.
    // Shaped so that no plan can drive it from the due messages (a fresh table without
    // statistics got a semi join over every due row, 0.5 s): the next ids are computed from
    // the written keys first, then locked one by one by primary key; "not written" is a hashed
    // NOT IN.
    publishedManyClaimNext: {
      name: statementName(schema, `outbox_published_many_claim_next`),
      text: `WITH done AS (${published} RETURNING o.id, o.tenant_id, o.destination, o.ordering_key),
        nxt AS MATERIALIZED (
          SELECT (SELECT p.id FROM ${t} p
                  WHERE p.state = 'pending' AND p.ordering_key IS NOT NULL AND p.tenant_id = k.tenant_id
                    AND p.destination = k.destination AND p.ordering_key = k.ordering_key
                    AND p.id NOT IN (SELECT id FROM done)
                  ORDER BY p.id LIMIT 1) AS id
          FROM (SELECT DISTINCT tenant_id, destination, ordering_key FROM done WHERE ordering_key IS NOT NULL) k),
        heads AS (
          SELECT h.id FROM nxt CROSS JOIN LATERAL (
            SELECT o.id FROM ${t} o
            WHERE o.id = nxt.id AND o.state = 'pending' AND o.next_attempt_at <= now()
            FOR UPDATE OF o SKIP LOCKED) h
          LIMIT $5),
        ${claimHeads('$5', '$6', 'p.id NOT IN (SELECT id FROM done)')}
        SELECT 'written' AS kind, NULL::text AS run_of, (jsonb_populate_record(NULL::${t}, jsonb_build_object('id', d.id))).* FROM done d
        UNION ALL
        SELECT * FROM (${claimRows}) c`,
    },
    // Full-jitter backoff: random() * min(cap, base * 2^(attempt-1)), never sooner than a
    // Retry-After the destination gave (the relay bounds it). $3 base ms, $4 cap ms.
    // $9: per item, true for a run message, as in publishedMany: o.attempt + x.run::int is the
    // attempt it was published as.
    failMany: {
      name: statementName(schema, `outbox_fail_many`),
      text: `UPDATE ${t} o SET
          state = ${dead('x.reject OR o.attempt + x.run::int >= o.max_attempts')},
          dead_letter_reason = CASE WHEN x.reject THEN 'rejected' WHEN o.attempt + x.run::int >= o.max_attempts THEN 'attempts_exhausted' END,
          finished_at = CASE WHEN x.reject OR o.attempt + x.run::int >= o.max_attempts THEN now() END,
          attempt = o.attempt + x.run::int,
          next_attempt_at = CASE WHEN x.reject OR o.attempt + x.run::int >= o.max_attempts THEN o.next_attempt_at
            ELSE now() + make_interval(secs => greatest(
              COALESCE(x.retry_after_ms, 0),
              random() * least($4::double precision, $3::double precision * power(2::double precision, o.attempt + x.run::int - 1))) / 1000.0) END,
          last_error = x.error || jsonb_build_object('at', now()),
          updated_at = now()
        FROM unnest($1::bigint[], $2::integer[], $5::jsonb[], $6::boolean[], $7::double precision[], $8::integer[], $9::boolean[])
          AS x(id, attempt, error, reject, retry_after_ms, replays, run)
        WHERE o.id = ANY ($1::bigint[]) AND o.id = x.id AND o.attempt = x.attempt AND o.replay_count = x.replays
          AND o.state = 'pending'
        RETURNING o.id::text, o.state`,
    },
    get: { text: `SELECT * FROM ${t} WHERE id = $1` },
    // For one tenant: another tenant's message is not read at all (docs/security.md).
    getInTenant: { text: `SELECT * FROM ${t} WHERE id = $1 AND tenant_id = $2` },
    // Newest first, walked in id order (by state, the state index) until the page is full; $6, a
    // cursor, starts the walk below that id. Unnamed: planned with its filters in hand.
    list: {
      text: `SELECT * FROM ${t}
        WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR destination = $2) AND ($3::text IS NULL OR tenant_id = $3)
          AND ($6::bigint IS NULL OR id < $6)
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
      name: statementName(schema, `outbox_stats`),
      text: `SELECT
          (SELECT COALESCE(jsonb_agg(jsonb_build_object('destination', destination, 'state', state, 'n', n)
                    ORDER BY destination, state), '[]'::jsonb)
             FROM (SELECT destination, state, sum(n)::int AS n FROM (
                     SELECT destination, state, n FROM ${schema}.outbox_counts WHERE $1::text IS NULL OR tenant_id = $1
                     UNION ALL
                     SELECT destination, state, count(*) FROM ${t}
                     WHERE state = 'pending' AND ($1::text IS NULL OR tenant_id = $1) GROUP BY destination, state
                   ) u GROUP BY destination, state HAVING sum(n) <> 0) c) AS counts,
          (SELECT extract(epoch FROM now() - created_at)::float8 FROM ${t}
             WHERE state = 'pending' AND ($1::text IS NULL OR tenant_id = $1) ORDER BY id LIMIT 1) AS oldest`,
    },
    // Retention, on the leader: nothing unless epoch $4 holds the leader lease (queries/leader.ts).
    purge: {
      name: statementName(schema, `outbox_purge`),
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
