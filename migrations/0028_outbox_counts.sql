-- Why: every /metrics scrape (and GET /api/outbox/stats) counted the outbox messages per
-- destination and state over the whole table, so a scrape grew with the history of published
-- messages. Published and dead-lettered messages are now counted as they finish, as
-- finished_counts counts jobs (0009): a row per tenant, destination, state and shard (the writing
-- session's backend pid modulo 32, so writers on different connections do not queue behind one
-- counter row), summed by the reader. Pending messages are still counted where they are,
-- through the state index: there are as many as there is live work.
--
-- The counts are kept by statement triggers, so every writer keeps them exact: the relay,
-- retention's deletes, replays, hand-written SQL (a TRUNCATE empties the counts with the table).
-- Each statement adds its rows' changes per key in one upsert, in key order, so two statements
-- of one shard lock counter rows in the same order. A statement that moves no row into or out
-- of a finished state writes nothing. Workflow runs are not counted this way: runs are deleted
-- by a row trigger on jobs (0016), one statement per job, in job order, and two such deletes of
-- one shard could lock counter rows in opposite orders.

-- Writers wait from here to the commit, so the counts read at the end see every row the
-- triggers do not (LOCK takes no snapshot, whatever the session's isolation level).
LOCK TABLE outbox IN SHARE ROW EXCLUSIVE MODE;

-- Messages published or dead-lettered, by tenant (GET /api/outbox/stats?tenantId=) and destination.
CREATE TABLE outbox_counts (
  tenant_id   text    NOT NULL,
  destination text    NOT NULL,
  state       text    NOT NULL CHECK (state IN ('published', 'dead_lettered')),
  shard       integer NOT NULL,
  n           bigint  NOT NULL,
  PRIMARY KEY (tenant_id, destination, state, shard)
);

CREATE FUNCTION outbox_count() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- Not a DELETE: under REPEATABLE READ that would keep the counts of rows committed after
    -- the snapshot, which the TRUNCATE removes.
    TRUNCATE outbox_counts;
  ELSIF TG_OP = 'INSERT' THEN
    INSERT INTO outbox_counts AS c (tenant_id, destination, state, shard, n)
      SELECT tenant_id, destination, state, pg_backend_pid() % 32, count(*) FROM new_rows
      WHERE state IN ('published', 'dead_lettered') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (tenant_id, destination, state, shard) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO outbox_counts AS c (tenant_id, destination, state, shard, n)
      SELECT tenant_id, destination, state, pg_backend_pid() % 32, -count(*) FROM old_rows
      WHERE state IN ('published', 'dead_lettered') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (tenant_id, destination, state, shard) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    -- Each row's new version counts +1 where finished, its old one -1: exact whatever the
    -- statement did to the rows' ids.
    INSERT INTO outbox_counts AS c (tenant_id, destination, state, shard, n)
      SELECT tenant_id, destination, state, pg_backend_pid() % 32, sum(d) FROM (
        SELECT tenant_id, destination, state, -1 AS d FROM old_rows WHERE state IN ('published', 'dead_lettered')
        UNION ALL
        SELECT tenant_id, destination, state, 1 FROM new_rows WHERE state IN ('published', 'dead_lettered')) x
      GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
      ON CONFLICT (tenant_id, destination, state, shard) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER outbox_count_insert AFTER INSERT ON outbox
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_count();
CREATE TRIGGER outbox_count_update AFTER UPDATE ON outbox
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_count();
CREATE TRIGGER outbox_count_delete AFTER DELETE ON outbox
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_count();
CREATE TRIGGER outbox_count_truncate AFTER TRUNCATE ON outbox
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_count();

INSERT INTO outbox_counts (tenant_id, destination, state, shard, n)
  SELECT tenant_id, destination, state, 0, count(*) FROM outbox WHERE state IN ('published', 'dead_lettered')
  GROUP BY tenant_id, destination, state;
