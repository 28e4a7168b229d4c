// /api/outbox: stats, listing and reading messages, replaying one or a page of dead letters.
// Recording is not here: a message belongs in the caller's own database transaction.

import { zValidator } from '@hono/zod-validator';
import { type Context, Hono } from 'hono';
import type { Baton, OutboxMessage } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { validationHook } from '../errors.ts';
import { noBody } from '../json-body.ts';
import {
  listOutboxQuerySchema,
  outboxDlqReplayQuerySchema,
  outboxIdParamSchema,
  outboxTenantQuerySchema,
  toWireOutboxMessage,
  toWireOutboxStats,
} from '../outbox-schemas.ts';
import { BODY, ENGINE, fails, GUARDED, WRITE } from '../route-errors.ts';
import { scopeOf } from '../tenant-scope.ts';

/**
 * Reads a message limited to the caller's tenant (a tenant key's, or the one an admin's query
 * names) in the statement itself: another tenant's message is not found exactly as an id nobody
 * has, at the same cost.
 */
function readVisible(baton: Baton, c: Context<AppEnv>, id: string, given: string | undefined): Promise<OutboxMessage> {
  const tenant = scopeOf(c).tenant(given);
  return baton.outbox.get(id, tenant === undefined ? {} : { tenantId: tenant });
}

export function outboxRoutes(baton: Baton) {
  return (
    new Hono<AppEnv>()
      /** Counts by destination and state, the oldest pending message's age, and this process's relay counters. */
      .get(
        '/stats',
        fails(...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'),
        zValidator('query', outboxTenantQuerySchema, validationHook),
        async (c) => {
          const scope = scopeOf(c);
          const tenant = scope.tenant(c.req.valid('query').tenantId);
          const stats = await baton.outbox.stats(tenant === undefined ? {} : { tenantId: tenant });
          // The relay counters are this process's, over every tenant: an admin's to read.
          return c.json(toWireOutboxStats(stats, scope.tenantId === undefined ? baton.outbox.relayCounters() : null), 200);
        },
      )
      /** Newest first, by state / destination / tenantId, paged by limit (1..500) and offset. */
      .get(
        '/messages',
        fails(...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'),
        zValidator('query', listOutboxQuerySchema, validationHook),
        async (c) => {
          const q = c.req.valid('query');
          const page = await baton.outbox.list({ ...q, tenantId: scopeOf(c).tenant(q.tenantId) });
          return c.json({ messages: page.messages.map(toWireOutboxMessage), limit: page.limit, offset: page.offset }, 200);
        },
      )
      .get(
        '/messages/:id',
        fails('OUTBOX_MESSAGE_NOT_FOUND', ...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'),
        zValidator('param', outboxIdParamSchema, validationHook),
        zValidator('query', outboxTenantQuerySchema, validationHook),
        async (c) => {
          const m = await readVisible(baton, c, c.req.valid('param').id, c.req.valid('query').tenantId);
          return c.json(toWireOutboxMessage(m), 200);
        },
      )
      /** Published or dead-lettered messages only (409 while pending): published again, with a fresh budget. */
      .post(
        '/messages/:id/replay',
        fails('OUTBOX_MESSAGE_NOT_FOUND', 'OUTBOX_STATE_CONFLICT', ...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'),
        noBody(),
        zValidator('param', outboxIdParamSchema, validationHook),
        zValidator('query', outboxTenantQuerySchema, validationHook),
        async (c) => {
          const { id } = c.req.valid('param');
          const given = c.req.valid('query').tenantId;
          if (scopeOf(c).tenant(given) !== undefined) await readVisible(baton, c, id, given);
          const m = await baton.outbox.replay(id);
          c.get('log').info({ outboxMessageId: m.id }, 'outbox message replayed');
          return c.json(toWireOutboxMessage(m), 200);
        },
      )
      /** Up to `limit` (default 100, max 1000) dead letters, oldest first, back to pending. */
      .post(
        '/dlq/replay',
        fails(...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'),
        noBody(),
        zValidator('query', outboxDlqReplayQuerySchema, validationHook),
        async (c) => {
          const q = c.req.valid('query');
          const tenant = scopeOf(c).tenant(q.tenantId);
          const replayed = await baton.outbox.replayDeadLetters({
            ...(q.limit === undefined ? {} : { limit: q.limit }),
            ...(q.destination === undefined ? {} : { destination: q.destination }),
            ...(tenant === undefined ? {} : { tenantId: tenant }),
          });
          c.get('log').info({ count: replayed.length }, 'outbox dead letters replayed');
          return c.json({ replayed: replayed.length, messages: replayed.map(toWireOutboxMessage) }, 200);
        },
      )
  );
}
