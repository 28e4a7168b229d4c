-- Why: a transactional outbox. A message is recorded in the caller's transaction, so it
-- commits or vanishes with their business write; relays publish it afterwards to a webhook
-- or a broker, with no transaction or lock held across the call. There is no lease column:
-- a claim spends an attempt and pushes next_attempt_at past the publish (the visibility
-- timeout), and every outcome write is fenced by that attempt number. An abandoned claim
-- reappears when next_attempt_at lapses; its late outcome write then matches zero rows.
CREATE TABLE outbox (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id          text        NOT NULL DEFAULT 'default',
  -- A named publisher (webhook, RabbitMQ, NATS) configured on the relays.
  destination        text        NOT NULL,
  -- Routing key, subject or webhook topic.
  topic              text        NOT NULL,
  payload            jsonb       NOT NULL DEFAULT 'null'::jsonb,
  headers            jsonb       NOT NULL DEFAULT '{}'::jsonb,
  -- The consumer's dedup key: sent with every publish of the message (AMQP message id,
  -- Nats-Msg-Id, a webhook header); a second record with the same key returns the first.
  message_key        text        NOT NULL,
  -- Messages of one (tenant, destination, ordering_key) are published one at a time, in id order.
  ordering_key       text,
  state              text        NOT NULL DEFAULT 'pending',
  attempt            integer     NOT NULL DEFAULT 0,
  max_attempts       integer     NOT NULL,
  -- Pending: when it may be claimed next (after a claim: when that claim's time runs out).
  next_attempt_at    timestamptz NOT NULL DEFAULT now(),
  last_error         jsonb,
  dead_letter_reason text,
  replay_count       integer     NOT NULL DEFAULT 0,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  -- Published or dead-lettered.
  finished_at        timestamptz,

  CONSTRAINT outbox_state_valid CHECK (state IN ('pending', 'published', 'dead_lettered')),
  CONSTRAINT outbox_message_key_unique UNIQUE (tenant_id, destination, message_key)
);

-- The claim: due pending messages, earliest first.
CREATE INDEX outbox_due_idx ON outbox (next_attempt_at, id) WHERE state = 'pending';
-- The ordering guard: is an older message of the same key still pending?
CREATE INDEX outbox_ordering_idx ON outbox (tenant_id, destination, ordering_key, id)
  WHERE state = 'pending' AND ordering_key IS NOT NULL;
-- Listings by state (newest first), the oldest pending message, retention of finished ones.
CREATE INDEX outbox_state_idx ON outbox (state, id);
