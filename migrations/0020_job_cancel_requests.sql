-- Why: a running job can be asked to stop. Once a handler holds the lease it may already
-- have done its side effect, so the request does not flip the row to 'cancelled' under it:
-- it is recorded here, beside the state, and the holder's signal is aborted (NOTIFY, or its
-- next heartbeat). The final state then says what happened: 'cancelled' when the attempt
-- ended in a failure (the handler stopped on the signal) or no handler holds it any more
-- (its lease was reaped, or given back), its real outcome ('succeeded') when the handler
-- finished anyway, with the request kept beside it. Every one of those writes is the usual
-- fenced outcome statement, reading the request under the row's lock.
-- A job with a request is never retried or claimed again: no statement sets it back to
-- pending (or waiting) while the request stands, and the CHECK makes such a row impossible.
-- Replay clears the request along with the outcome.
-- NOT VALID: every row there is has no request yet (the column is new), so the check holds for
-- them without scanning the table under this migration's lock; every write from now on is checked.
ALTER TABLE jobs ADD COLUMN cancel_requested_at timestamptz;
ALTER TABLE jobs ADD CONSTRAINT jobs_cancel_request_not_queued
  CHECK (cancel_requested_at IS NULL OR state NOT IN ('pending', 'waiting')) NOT VALID;
