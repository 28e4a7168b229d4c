-- Why: flow control across a fleet. A queue's claims are fair across tenants (weighted
-- round-robin), and a queue or a concurrency key may be capped (running at once) or rate
-- limited (starts per period) for every process together. Every limit is enforced by the
-- claim itself, against what the jobs table and the rows here say under a lock, so no
-- process's memory or clock decides; a dead worker's slots come back with its leases.

-- A job may carry a concurrency key (e.g. 'vendor:x') and its own cap for that key.
ALTER TABLE jobs ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer;
ALTER TABLE jobs ADD CONSTRAINT jobs_concurrency_limit_valid
  CHECK (concurrency_limit IS NULL OR (concurrency_limit >= 1 AND concurrency_key IS NOT NULL));

-- The fair claim walks the distinct tenants of a queue's pending jobs (one probe each), then
-- takes each tenant's first jobs in claim order. Keyed jobs are claimed per key, elsewhere.
-- Only pending rows enter these indexes, so a claim (pending -> running) writes none of them.
CREATE INDEX IF NOT EXISTS jobs_fair_idx ON jobs (queue, tenant_id, priority DESC, run_at, id)
  WHERE state = 'pending' AND concurrency_key IS NULL;
CREATE INDEX IF NOT EXISTS jobs_keyed_idx ON jobs (queue, concurrency_key, priority DESC, run_at, id)
  WHERE state = 'pending' AND concurrency_key IS NOT NULL;
-- Running jobs per key, counted under the key's lock. Jobs without a key never enter it.
CREATE INDEX IF NOT EXISTS jobs_keyed_live_idx ON jobs (concurrency_key)
  WHERE state IN ('leased', 'running') AND concurrency_key IS NOT NULL;

-- Weight of a tenant in every queue's round-robin (default 1): its slice per round.
CREATE TABLE tenant_weights (
  tenant_id  text        PRIMARY KEY,
  weight     integer     NOT NULL CHECK (weight BETWEEN 1 AND 1000),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A row here makes a queue "controlled": its claims go through the flow-controlled claim
-- (locks, counts, buckets). Without a row a queue's claim pays for none of it.
--   keyed: a job with a concurrency key was enqueued here (never reset by Baton).
--   tokens/refilled_at: the queue's token bucket (capacity rate_limit, refilled at
--   rate_limit per rate_period_ms), written only under the row's lock.
CREATE TABLE flow_queues (
  queue             text        PRIMARY KEY,
  concurrency_limit integer     CHECK (concurrency_limit >= 1),
  rate_limit        integer     CHECK (rate_limit >= 1),
  rate_period_ms    integer     CHECK (rate_period_ms >= 1),
  keyed             boolean     NOT NULL DEFAULT false,
  tokens            double precision,
  refilled_at       timestamptz,
  updated_at        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT flow_queues_rate_pair CHECK ((rate_limit IS NULL) = (rate_period_ms IS NULL))
);

-- Limits of concurrency keys: an exact key, or a prefix ending in '*' ('vendor:*'). The most
-- specific pattern wins (the exact key, else the longest prefix); a job's own
-- concurrency_limit wins over both for its cap.
CREATE TABLE flow_keys (
  pattern           text        PRIMARY KEY,
  concurrency_limit integer     CHECK (concurrency_limit >= 1),
  rate_limit        integer     CHECK (rate_limit >= 1),
  rate_period_ms    integer     CHECK (rate_period_ms >= 1),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT flow_keys_rate_pair CHECK ((rate_limit IS NULL) = (rate_period_ms IS NULL)),
  CONSTRAINT flow_keys_some_limit CHECK (concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL)
);

-- Token buckets of rate-limited keys, written only under the key's advisory lock.
CREATE TABLE flow_buckets (
  key         text             PRIMARY KEY,
  tokens      double precision NOT NULL,
  refilled_at timestamptz      NOT NULL
);
