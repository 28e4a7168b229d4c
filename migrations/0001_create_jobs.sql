-- Why: the jobs table is the whole queue. Every job state, every lease and every
-- outcome lives in one row, fenced by lease_token (drawn from one sequence, so
-- tokens strictly increase across all jobs and all claims).

CREATE SEQUENCE lease_token_seq AS bigint;

CREATE TABLE jobs (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id          text        NOT NULL DEFAULT 'default',
  queue              text        NOT NULL DEFAULT 'default',
  job_type           text        NOT NULL,
  payload            jsonb       NOT NULL DEFAULT '{}'::jsonb,
  priority           integer     NOT NULL DEFAULT 0,
  state              text        NOT NULL DEFAULT 'pending',
  run_at             timestamptz NOT NULL DEFAULT now(),
  attempt            integer     NOT NULL DEFAULT 0,
  max_attempts       integer     NOT NULL DEFAULT 5,
  lease_token        bigint,
  lease_owner        text,
  lease_expires_at   timestamptz,
  idempotency_key    text,
  last_error         jsonb,
  errors             jsonb       NOT NULL DEFAULT '[]'::jsonb,
  dead_letter_reason text,
  result             jsonb,
  replay_count       integer     NOT NULL DEFAULT 0,
  created_at         timestamptz NOT NULL DEFAULT now(),
  started_at         timestamptz,
  finished_at        timestamptz,
  updated_at         timestamptz NOT NULL DEFAULT now(),

  CONSTRAINT jobs_state_valid CHECK (state IN
    ('pending', 'leased', 'running', 'succeeded', 'dead_lettered', 'cancelled')),
  CONSTRAINT jobs_attempts_valid CHECK (max_attempts >= 1 AND attempt >= 0),
  -- A live lease has a token, an owner and an expiry; nothing else has an owner or expiry.
  CONSTRAINT jobs_lease_consistent CHECK (CASE WHEN state IN ('leased', 'running')
    THEN lease_token IS NOT NULL AND lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL
    ELSE lease_owner IS NULL AND lease_expires_at IS NULL END),
  CONSTRAINT jobs_dead_letter_reason CHECK ((state = 'dead_lettered') = (dead_letter_reason IS NOT NULL))
);

-- The claim: pending rows only, in claim order within a queue.
CREATE INDEX jobs_claim_idx ON jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';

-- Idempotent enqueue, scoped per tenant.
CREATE UNIQUE INDEX jobs_idempotency_idx ON jobs (tenant_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

-- The reaper: live leases by expiry, and by owner for fast reclaim and heartbeats.
CREATE INDEX jobs_live_lease_expiry_idx ON jobs (lease_expires_at) WHERE state IN ('leased', 'running');
CREATE INDEX jobs_live_lease_owner_idx ON jobs (lease_owner) WHERE state IN ('leased', 'running');

-- Admin listings: newest first, optionally by state.
CREATE INDEX jobs_state_id_idx ON jobs (state, id DESC);
CREATE INDEX jobs_tenant_id_idx ON jobs (tenant_id, id DESC);

-- Live worker processes. Each holds a session-level advisory lock (lock_key) on
-- its presence connection for as long as it lives; a row whose lock nobody holds
-- belongs to a dead session, and its leases may be reclaimed after a short grace.
CREATE SEQUENCE worker_lock_seq AS integer CYCLE;

CREATE TABLE workers (
  id            text        PRIMARY KEY,
  lock_key      integer     NOT NULL,
  hostname      text        NOT NULL,
  pid           integer     NOT NULL,
  queues        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  in_flight     integer     NOT NULL DEFAULT 0,
  started_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  gone_since    timestamptz
);
