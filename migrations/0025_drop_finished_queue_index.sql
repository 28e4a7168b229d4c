-- Why: migration 0024 replaced the index of finished jobs by queue with finished_blocks; this
-- drops the index in a transaction of its own, so its exclusive lock is the first this
-- transaction takes on jobs (never raised from a lesser one while others wait). The drop waits
-- for every statement on jobs in flight, and statements on jobs wait for it; it is brief.
DROP INDEX IF EXISTS jobs_finished_queue_id_idx;
