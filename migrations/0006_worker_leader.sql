-- Why: one process per database runs the periodic maintenance (reaper sweeps, and what comes
-- after them), elected by a session-level advisory lock on its presence connection. The
-- elected worker marks its row, so operators can see the leader; the mark is cleared by the
-- next leader, and a leader whose session ended shows as gone like any worker.
ALTER TABLE workers ADD COLUMN leader_since timestamptz;
