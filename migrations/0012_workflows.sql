-- Why: durable workflows. A run is driven by one ordinary job (job_id): its leases,
-- fencing, retries and dead-lettering are the job's. Each step's output is committed
-- here, keyed by (run, name, occurrence), before the run goes on; a run that waits
-- (sleep, event) gives its job back to pending with a run_at and holds no worker.

CREATE TABLE workflow_runs (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name            text        NOT NULL,
  tenant_id       text        NOT NULL DEFAULT 'default',
  input           jsonb       NOT NULL DEFAULT 'null'::jsonb,
  -- dead_lettered is not stored: it is the driving job's state (see the run reads).
  state           text        NOT NULL DEFAULT 'running',
  job_id          bigint,
  -- A child run (ctx.all): the run that started it, woken when it finishes.
  parent_run_id   bigint,
  output          jsonb,
  -- Completed steps so far; only ever raised (GREATEST), so progress never rewinds.
  progress        integer     NOT NULL DEFAULT 0,
  -- While sleeping or waiting: the event waited for and the wake-up time (NULL: none).
  wait_event      text,
  wake_at         timestamptz,
  idempotency_key text,
  replay_count    integer     NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz,

  CONSTRAINT workflow_runs_state_valid CHECK (state IN ('running', 'sleeping', 'waiting', 'succeeded', 'cancelled'))
);

CREATE UNIQUE INDEX workflow_runs_idempotency_idx ON workflow_runs (tenant_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX workflow_runs_name_id_idx ON workflow_runs (name, id DESC);
CREATE INDEX workflow_runs_job_idx ON workflow_runs (job_id);
CREATE INDEX workflow_runs_parent_idx ON workflow_runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

-- One row per step of a run. kind: step (a function's output), sleep, event or children (a wait).
-- status: succeeded (output committed), failed (the last attempt threw; retried by the job),
-- waiting (a sleep or event wait that has not yet ended).
CREATE TABLE workflow_steps (
  run_id      bigint      NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
  name        text        NOT NULL,
  occurrence  integer     NOT NULL,
  seq         integer     NOT NULL,
  kind        text        NOT NULL,
  status      text        NOT NULL,
  output      jsonb,
  error       jsonb,
  attempts    integer     NOT NULL DEFAULT 0,
  wait_event  text,
  wake_at     timestamptz,
  started_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, name, occurrence),

  CONSTRAINT workflow_steps_kind_valid CHECK (kind IN ('step', 'sleep', 'event', 'children')),
  CONSTRAINT workflow_steps_status_valid CHECK (status IN ('succeeded', 'failed', 'waiting'))
);

-- Events sent to a run. Kept until a wait consumes one (consumed_by names the step), so an
-- event that arrives before the run waits for it is not lost; a repeated idempotency key is absorbed.
CREATE TABLE workflow_events (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id          bigint      NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
  name            text        NOT NULL,
  payload         jsonb       NOT NULL DEFAULT 'null'::jsonb,
  idempotency_key text,
  consumed_by     text,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX workflow_events_idempotency_idx ON workflow_events (run_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX workflow_events_unconsumed_idx ON workflow_events (run_id, name, id) WHERE consumed_by IS NULL;
