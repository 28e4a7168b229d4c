-- Why: a producer can tell whether anything will run what it enqueues. Each live worker
-- records the job types it has handlers for beside the queues it works, so an enqueue to a
-- queue no live worker serves, or of a type no worker of that queue can run, is accepted
-- (the handler may be deployed later) and answered with a warning.
-- A column with a constant default: no table rewrite, a brief ACCESS EXCLUSIVE lock on a
-- table of one row per worker.
ALTER TABLE workers ADD COLUMN job_types text[] NOT NULL DEFAULT '{}';
