-- Why: a completion may skip recording its jobs' blocks in finished_blocks when its executor
-- inserted that (queue, block) row moments ago (src/db/pg/recorded-blocks.ts). It decides by the
-- queue the job had when it was claimed. Baton never changes a job's queue, but hand-written SQL
-- may move a live job to another queue; the job would then finish in a queue whose block was
-- never recorded. So a move of any row, live or finished, now records the block for its new
-- queue (0024 recorded it for finished rows only). A live row's block recorded early is
-- harmless: a listing reads the block and finds nothing finished there yet, and retention
-- deletes the row once no job of the queue is left in the block.
DROP TRIGGER jobs_record_finished_block_on_update ON jobs;
CREATE TRIGGER jobs_record_finished_block_on_update AFTER UPDATE OF queue ON jobs FOR EACH ROW
  WHEN (NEW.queue IS DISTINCT FROM OLD.queue)
  EXECUTE FUNCTION jobs_record_finished_block();
