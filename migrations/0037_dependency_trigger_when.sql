-- Why: the dependency triggers' WHEN (migration 0016) is read and prepared by every statement that
-- changes a job's state or deletes jobs, a plain job's claims and completions included, whether or
-- not any row has dependents: the update trigger's was 2,007 characters of stored node tree, most
-- of it the state lists. The WHEN now reads has_dependents alone (124 characters), and the
-- function tests the states, so a job with dependents still releases them exactly when it leaves
-- its live states for a finished one, and a statement that touches no such job prepares less.
CREATE OR REPLACE FUNCTION jobs_release_dependents() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.state NOT IN ('succeeded', 'dead_lettered', 'cancelled') THEN
      -- deleteOnSuccess deletes a live lease at completion: that is a success.
      PERFORM release_dependents(OLD.id, CASE WHEN OLD.state IN ('leased', 'running') THEN 'succeeded' ELSE 'cancelled' END);
    END IF;
  ELSIF NEW.state IN ('succeeded', 'dead_lettered', 'cancelled')
    AND OLD.state NOT IN ('succeeded', 'dead_lettered', 'cancelled') THEN
    PERFORM release_dependents(NEW.id, NEW.state);
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER jobs_release_dependents ON jobs;
CREATE TRIGGER jobs_release_dependents AFTER UPDATE OF state ON jobs FOR EACH ROW
  WHEN (NEW.has_dependents)
  EXECUTE FUNCTION jobs_release_dependents();
DROP TRIGGER jobs_release_dependents_on_delete ON jobs;
CREATE TRIGGER jobs_release_dependents_on_delete AFTER DELETE ON jobs FOR EACH ROW
  WHEN (OLD.has_dependents)
  EXECUTE FUNCTION jobs_release_dependents();
