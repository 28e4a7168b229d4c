-- Why: every completion paid for an entry in jobs_finished_idx (state, finished_at), about 80 B
-- of WAL and two buffer hits per job, for one reader: the console's window of recent outcomes
-- (GET /api/stats). That window now reads the newest ids of the primary key (queries/stats.ts),
-- so nothing reads this index any more. Retention walks jobs_finished_queue_id_idx, which stays.
-- A plain DROP INDEX takes a brief exclusive lock on jobs; nothing to build beforehand.
DROP INDEX IF EXISTS jobs_finished_idx;
