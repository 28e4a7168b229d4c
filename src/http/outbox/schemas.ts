// The outbox over HTTP: the zod contracts of the requests (strict, as everywhere) and of the
// answers, and the mapping of messages and stats onto the wire.

import type { JSONValue } from 'hono/utils/types';
import { z } from 'zod';
import {
  OUTBOX_LIST_LIMIT_DEFAULT,
  OUTBOX_LIST_LIMIT_MAX,
  OUTBOX_LIST_OFFSET_MAX,
  OUTBOX_REPLAY_LIMIT_DEFAULT,
  OUTBOX_REPLAY_LIMIT_MAX,
} from '../../core/outbox/service.ts';
import { DEAD_LETTER_REASONS, OUTBOX_STATES, type OutboxMessage, type OutboxStats, type RelayCounters } from '../../index.ts';
import { cursorParam, intParam, nameSchema, nextCursorSchema } from '../schemas.ts';

const tenantId = nameSchema.optional().meta({ description: 'only this tenant' });

/** Any string: one that cannot name a message answers 404 OUTBOX_MESSAGE_NOT_FOUND. */
export const outboxIdParamSchema = z.object({
  id: z.string().meta({ description: 'the message id, a decimal integer; one that names no message answers 404 OUTBOX_MESSAGE_NOT_FOUND' }),
});

export const outboxTenantQuerySchema = z.object({ tenantId }).strict();

export const listOutboxQuerySchema = z
  .object({
    state: z.enum(OUTBOX_STATES).optional(),
    destination: nameSchema.optional(),
    tenantId,
    limit: intParam(1, OUTBOX_LIST_LIMIT_MAX, OUTBOX_LIST_LIMIT_DEFAULT).optional(),
    offset: intParam(0, OUTBOX_LIST_OFFSET_MAX).optional(),
    cursor: cursorParam,
  })
  .strict();

export const outboxDlqReplayQuerySchema = z
  .object({
    limit: intParam(1, OUTBOX_REPLAY_LIMIT_MAX, OUTBOX_REPLAY_LIMIT_DEFAULT).optional(),
    destination: nameSchema.optional(),
    tenantId,
  })
  .strict();

const time = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  .meta({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds (Date#toISOString)' });
const count = z.int().min(0);
const counts = z.strictObject({ pending: count, published: count, dead_lettered: count });

export const wireOutboxMessageSchema = z.strictObject({
  id: z.string().regex(/^[1-9][0-9]*$/),
  tenantId: z.string(),
  destination: z.string(),
  topic: z.string(),
  payload: z.unknown().meta({ description: 'any JSON' }),
  headers: z.record(z.string(), z.string()),
  messageKey: z.string().meta({ description: "the consumer's dedup key, sent with every publish" }),
  orderingKey: z.string().nullable(),
  state: z.enum(OUTBOX_STATES),
  attempt: count.meta({ description: 'claims so far (a claim spends one)' }),
  maxAttempts: z.int().min(1),
  nextAttemptAt: time.meta({ description: 'pending: when it may be claimed next' }),
  lastError: z.strictObject({ name: z.string(), message: z.string(), at: z.string().optional() }).nullable(),
  deadLetterReason: z.enum(DEAD_LETTER_REASONS).nullable(),
  replayCount: count,
  createdAt: time,
  updatedAt: time,
  finishedAt: time.nullable(),
});

export const wireOutboxStatsSchema = z.strictObject({
  destinations: z.array(z.strictObject({ destination: z.string(), counts })),
  totals: counts,
  oldestPendingAgeSeconds: z.number().min(0).nullable().meta({ description: 'since the oldest pending message was recorded' }),
  relay: z
    .strictObject({ claimed: count, published: count, retried: count, deadLettered: count, fenced: count })
    .nullable()
    .meta({ description: "this server process's relay counters; null when it runs none" }),
});

export const outboxResponseSchemas = {
  page: z.strictObject({
    messages: z.array(wireOutboxMessageSchema),
    limit: z.int(),
    offset: z.int(),
    nextCursor: nextCursorSchema('message'),
  }),
  replayed: z.strictObject({ replayed: count, messages: z.array(wireOutboxMessageSchema) }),
};

export function toWireOutboxMessage(m: OutboxMessage) {
  return {
    id: m.id,
    tenantId: m.tenantId,
    destination: m.destination,
    topic: m.topic,
    payload: (m.payload ?? null) as JSONValue,
    headers: m.headers,
    messageKey: m.messageKey,
    orderingKey: m.orderingKey,
    state: m.state,
    attempt: m.attempt,
    maxAttempts: m.maxAttempts,
    nextAttemptAt: m.nextAttemptAt.toISOString(),
    lastError: m.lastError
      ? { name: m.lastError.name, message: m.lastError.message, ...(m.lastError.at ? { at: m.lastError.at } : {}) }
      : null,
    deadLetterReason: m.deadLetterReason,
    replayCount: m.replayCount,
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
    finishedAt: m.finishedAt ? m.finishedAt.toISOString() : null,
  };
}

export function toWireOutboxStats(s: OutboxStats, relay: RelayCounters | null) {
  return { ...s, relay };
}
