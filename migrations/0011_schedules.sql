-- Why: recurring work as rows. Each schedule names a cron expression in an IANA zone and the
-- job it enqueues; the ticker (on the elected leader) turns each due occurrence into an
-- ordinary job with the idempotency key cron:<id>:<instant>, then moves next_fire_at forward
-- in one guarded statement (compare-and-set on version and next_fire_at, never backwards).
-- enabled = false with disabled_reason NULL is an operator's pause; with a reason, the
-- scheduler disabled it (an expression or zone it cannot evaluate, a job it cannot enqueue).
CREATE TABLE schedules (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id        text NOT NULL,
  name             text NOT NULL,
  cron             text NOT NULL,
  timezone         text NOT NULL,
  job_type         text NOT NULL,
  queue            text NOT NULL,
  payload          jsonb NOT NULL DEFAULT 'null',
  priority         integer NOT NULL DEFAULT 0,
  max_attempts     integer,
  misfire_policy   text NOT NULL DEFAULT 'fire_once' CHECK (misfire_policy IN ('skip', 'fire_once', 'fire_all')),
  catch_up_limit   integer NOT NULL DEFAULT 100 CHECK (catch_up_limit >= 1),
  enabled          boolean NOT NULL DEFAULT true,
  disabled_reason  text,
  next_fire_at     timestamptz,
  last_fired_at    timestamptz,
  version          bigint NOT NULL DEFAULT 1,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT schedules_tenant_name_key UNIQUE (tenant_id, name)
);

-- The ticker's two reads: the due schedules, and the earliest next fire time to sleep until.
CREATE INDEX schedules_due_idx ON schedules (next_fire_at) WHERE enabled;
