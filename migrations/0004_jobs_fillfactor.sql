-- Why: a job's row is rewritten at least twice after its insert (claim, outcome), and neither
-- update can be HOT (0002). With full pages every new version goes to another page, at the
-- table's end: a relation extension, a full tuple image in the WAL and one more page dirtied
-- per update. Leaving half of each page free on insert lets those versions land next to the
-- old one (the WAL record then carries only the changed bytes) and lets pruning reuse the
-- space of versions nobody can see any more. Measured on the throughput drain: about a third
-- less WAL per job. New pages only: no rewrite, and only a brief SHARE UPDATE EXCLUSIVE lock.
ALTER TABLE jobs SET (fillfactor = 50);
