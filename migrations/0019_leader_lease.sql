-- Why: leadership (the cron ticker, retention, vacuum, worker pruning) was a session-level
-- advisory lock on the presence connection, which a paused process (SIGSTOP, a long GC or VM
-- stall) keeps for as long as its TCP session lives: nothing ticked until it woke, and then
-- it acted on what it had read before the pause. Now it is a lease in this one row, expiring
-- by the database clock and renewed by the holder. Each takeover bumps the epoch, and every
-- leader-only write names the epoch it was made under and locks this row FOR KEY SHARE while
-- it runs: a write of a deposed leader matches nothing, and a takeover (which locks the row
-- FOR UPDATE) waits for a leader write in progress, so the two never interleave. Renewals take
-- the weaker FOR NO KEY UPDATE lock and never wait for the leader's own writes.
-- holder_lock_key is the holder's presence lock key (null for a process without one): when
-- nobody holds that lock any more, the holder's session is provably gone (kill -9, a cut
-- network) and the lease may be taken at once rather than at its expiry.
-- workers.leader_since (0006) is no longer written; processes of the previous version may
-- still write it during a rolling upgrade.
CREATE TABLE leader_lease (
  singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  epoch            bigint NOT NULL DEFAULT 0,
  holder           text,
  holder_lock_key  integer,
  expires_at       timestamptz NOT NULL DEFAULT '-infinity',
  acquired_at      timestamptz,
  renewed_at       timestamptz
);
INSERT INTO leader_lease DEFAULT VALUES ON CONFLICT DO NOTHING;
