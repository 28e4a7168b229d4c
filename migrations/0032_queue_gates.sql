-- Why: every claim asked three tables whether its queue is paused (paused_queues), flow-controlled
-- (flow_queues) or has held another tenant's jobs (tenant_queues): three probes, six relations
-- opened and locked per claim, which cost a claim of one job about a tenth of its round trip
-- (results/claim-sparse). Here one row per reason says the same, and a claim probes one index.
--
-- A gate row is written by triggers in the transaction that writes its source row, so a claim
-- sees the gate whenever it would have seen the row, whoever wrote it (Baton, an operator's
-- SQL, an older Baton during a rolling upgrade, which still reads and writes the three
-- tables). The gates of paused and controlled queues follow their rows both ways, TRUNCATE
-- included: a stale one would stop a queue. A queue stays 'tenanted', as it stays in
-- tenant_queues; deleting its last row there by hand lifts the gate (a stale 'tenanted' gate
-- costs claims their FIFO shortcut, never a job).
--
-- No unique key, as in tenant_queues: two first inserts of other tenants' jobs into two queues,
-- in opposite orders, would wait on each other's gate and deadlock. The other reasons follow
-- tables keyed by queue, whose own key serializes their writers.

-- The three tables' writers wait from here to the commit, so the copy below misses none.
LOCK TABLE paused_queues, flow_queues, tenant_queues IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE queue_gates (
  queue  text NOT NULL,
  reason text NOT NULL CHECK (reason IN ('paused', 'controlled', 'tenanted'))
);
CREATE INDEX queue_gates_queue_idx ON queue_gates (queue, reason);

CREATE FUNCTION queue_gates_follow() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  why text := TG_ARGV[0];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM queue_gates WHERE reason = why;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    -- tenant_queues may hold a queue twice: its gate goes with the last row.
    IF why <> 'tenanted' OR NOT EXISTS (SELECT 1 FROM tenant_queues WHERE queue = OLD.queue) THEN
      DELETE FROM queue_gates WHERE queue = OLD.queue AND reason = why;
    END IF;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    IF NOT EXISTS (SELECT 1 FROM queue_gates WHERE queue = NEW.queue AND reason = why) THEN
      INSERT INTO queue_gates (queue, reason) VALUES (NEW.queue, why);
    END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER paused_queues_gate AFTER INSERT OR DELETE OR UPDATE OF queue ON paused_queues
  FOR EACH ROW EXECUTE FUNCTION queue_gates_follow('paused');
CREATE TRIGGER paused_queues_gate_truncate AFTER TRUNCATE ON paused_queues
  FOR EACH STATEMENT EXECUTE FUNCTION queue_gates_follow('paused');
CREATE TRIGGER flow_queues_gate AFTER INSERT OR DELETE OR UPDATE OF queue ON flow_queues
  FOR EACH ROW EXECUTE FUNCTION queue_gates_follow('controlled');
CREATE TRIGGER flow_queues_gate_truncate AFTER TRUNCATE ON flow_queues
  FOR EACH STATEMENT EXECUTE FUNCTION queue_gates_follow('controlled');
CREATE TRIGGER tenant_queues_gate AFTER INSERT OR DELETE OR UPDATE OF queue ON tenant_queues
  FOR EACH ROW EXECUTE FUNCTION queue_gates_follow('tenanted');
CREATE TRIGGER tenant_queues_gate_truncate AFTER TRUNCATE ON tenant_queues
  FOR EACH STATEMENT EXECUTE FUNCTION queue_gates_follow('tenanted');

INSERT INTO queue_gates (queue, reason)
  SELECT queue, 'paused' FROM paused_queues
  UNION SELECT queue, 'controlled' FROM flow_queues
  UNION SELECT DISTINCT queue, 'tenanted' FROM tenant_queues;
