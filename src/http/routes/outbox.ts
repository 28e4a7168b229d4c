// /api/outbox: stats, listing and reading messages, replaying one or a page of dead letters.
// Recording is not here: a message belongs in the caller's own database transaction.

import { Hono } from 'hono';
import { zValidator } from '@hono/zod-validator';
import type { Baton, OutboxMessage } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { ApiError, validationHook } from '../errors.ts';
import { noBody } from '../json-body.ts';
import {
  listOutboxQuerySchema,
  outboxDlqReplayQuerySchema,
  outboxIdParamSchema,
  outboxTenantQuerySchema,
  toWireOutboxMessage,
  toWireOutboxStats,
} from '../outbox-schemas.ts';

/**
 * The tenant a request is about, as the job routes read it: the `tenantId` query parameter
 * (absent: every tenant). The one place to change when tenants come from API keys.
 */
export function requestTenant(query: { tenantId?: string | undefined }): string | undefined {
  return query.tenantId;
}

/** A message of another tenant than the request's is not found, as an unknown id. */
function ofTenant(m: OutboxMessage, tenant: string | undefined): OutboxMessage {
  if (tenant !== undefined && m.tenantId !== tenant) throw new ApiError('OUTBOX_MESSAGE_NOT_FOUND', `outbox message ${m.id} not found`);
  return m;
}

export function outboxRoutes(baton: Baton) {
  return (
    new Hono<AppEnv>()
      /** Counts by destination and state, the oldest pending message's age, and this process's relay counters. */
      .get('/stats', zValidator('query', outboxTenantQuerySchema, validationHook), async (c) => {
        const tenant = requestTenant(c.req.valid('query'));
        const stats = await baton.outbox.stats(tenant === undefined ? {} : { tenantId: tenant });
        return c.json(toWireOutboxStats(stats, baton.outbox.relayCounters()), 200);
      })
      /** Newest first, by state / destination / tenantId, paged by limit (1..500) and offset. */
      .get('/messages', zValidator('query', listOutboxQuerySchema, validationHook), async (c) => {
        const q = c.req.valid('query');
        const page = await baton.outbox.list({ ...q, tenantId: requestTenant(q) });
        return c.json({ messages: page.messages.map(toWireOutboxMessage), limit: page.limit, offset: page.offset }, 200);
      })
      .get(
        '/messages/:id',
        zValidator('param', outboxIdParamSchema, validationHook),
        zValidator('query', outboxTenantQuerySchema, validationHook),
        async (c) => {
          const m = await baton.outbox.get(c.req.valid('param').id);
          return c.json(toWireOutboxMessage(ofTenant(m, requestTenant(c.req.valid('query')))), 200);
        },
      )
      /** Published or dead-lettered messages only (409 while pending): published again, with a fresh budget. */
      .post(
        '/messages/:id/replay',
        noBody(),
        zValidator('param', outboxIdParamSchema, validationHook),
        zValidator('query', outboxTenantQuerySchema, validationHook),
        async (c) => {
          const { id } = c.req.valid('param');
          const tenant = requestTenant(c.req.valid('query'));
          if (tenant !== undefined) ofTenant(await baton.outbox.get(id), tenant);
          const m = await baton.outbox.replay(id);
          c.get('log').info({ outboxMessageId: m.id }, 'outbox message replayed');
          return c.json(toWireOutboxMessage(m), 200);
        },
      )
      /** Up to `limit` (default 100, max 1000) dead letters, oldest first, back to pending. */
      .post('/dlq/replay', noBody(), zValidator('query', outboxDlqReplayQuerySchema, validationHook), async (c) => {
        const q = c.req.valid('query');
        const tenant = requestTenant(q);
        const replayed = await baton.outbox.replayDeadLetters({
          ...(q.limit === undefined ? {} : { limit: q.limit }),
          ...(q.destination === undefined ? {} : { destination: q.destination }),
          ...(tenant === undefined ? {} : { tenantId: tenant }),
        });
        c.get('log').info({ count: replayed.length }, 'outbox dead letters replayed');
        return c.json({ replayed: replayed.length, messages: replayed.map(toWireOutboxMessage) }, 200);
      })
  );
}
