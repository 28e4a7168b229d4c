-- Why: the fair claim's one-tenant statement cost a claim about an eighth more than the FIFO
-- claim (two probes for the queue's tenants, then a pick that filters the tenant;
-- docs/benchmarks.md, What each part costs). A queue that has never held a job of a tenant
-- other than 'default' has one tenant by construction, so round-robin over its tenants is claim
-- order: its claims take the FIFO pick behind one probe of this table.
--
-- A queue enters here in the transaction that inserts its first job of another tenant (or
-- moves one there), by the triggers below, so every writer (Baton, a producer's own SQL,
-- COPY) marks it, and a claim sees the mark whenever it sees the job. No unique key: two
-- first inserts at once may both add a row (harmless to the EXISTS probes), where a key would
-- make the second wait for the first and two such transactions on two new queues could
-- deadlock. A queue stays marked.

-- Writers of jobs wait from here to the commit, so the read at the end sees every job the
-- trigger does not (LOCK takes no snapshot, whatever the session's isolation level).
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE tenant_queues (
  queue     text        NOT NULL,
  marked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tenant_queues_queue_idx ON tenant_queues (queue);

CREATE FUNCTION jobs_mark_tenant_queue() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM tenant_queues WHERE queue = NEW.queue) THEN
    INSERT INTO tenant_queues (queue) VALUES (NEW.queue);
  END IF;
  RETURN NULL;
END $$;

-- The WHEN is evaluated per inserted row; a default-tenant job queues no trigger event.
-- Baton never changes a job's queue or tenant; the update trigger is for SQL that does (it
-- fires only for statements that set either column, so Baton's updates never reach it).
CREATE TRIGGER jobs_mark_tenant_queue AFTER INSERT ON jobs FOR EACH ROW
  WHEN (NEW.tenant_id <> 'default')
  EXECUTE FUNCTION jobs_mark_tenant_queue();
CREATE TRIGGER jobs_mark_tenant_queue_on_update AFTER UPDATE OF queue, tenant_id ON jobs FOR EACH ROW
  WHEN (NEW.tenant_id <> 'default')
  EXECUTE FUNCTION jobs_mark_tenant_queue();

-- Queues that already hold such jobs (one read of the table, at this migration only).
INSERT INTO tenant_queues (queue) SELECT DISTINCT queue FROM jobs WHERE tenant_id <> 'default';
