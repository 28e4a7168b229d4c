// /api/outbox: stats, listing and reading messages, replaying one or a page of dead letters, each
// route declared once (route-spec.ts). Recording is not here: a message belongs in the caller's
// own database transaction. Tenant-scoped: another tenant's message is not found.

import type { Context } from 'hono';
import type { Baton, OutboxMessage } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { BODY, ENGINE, GUARDED, WRITE } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import { scopeOf } from '../tenant-scope.ts';
import {
  listOutboxQuerySchema,
  outboxDlqReplayQuerySchema,
  outboxIdParamSchema,
  outboxTenantQuerySchema,
  outboxResponseSchemas as r,
  toWireOutboxMessage,
  toWireOutboxStats,
  wireOutboxMessageSchema,
  wireOutboxStatsSchema,
} from './schemas.ts';

/**
 * Reads a message limited to the caller's tenant (a tenant key's, or the one an admin's query
 * names) in the statement itself: another tenant's message is not found exactly as an id nobody
 * has, at the same cost.
 */
function readVisible(baton: Baton, c: Context<AppEnv>, id: string, given: string | undefined): Promise<OutboxMessage> {
  const tenant = scopeOf(c).tenant(given);
  return baton.outbox.get(id, tenant === undefined ? {} : { tenantId: tenant });
}

const READ = [...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'] as const;

const outboxStats = defineRoute({
  method: 'get',
  path: '/api/outbox/stats',
  operationId: 'outboxStats',
  tag: 'outbox',
  summary: 'Outbox counts by destination and state, and the oldest pending age',
  query: outboxTenantQuerySchema,
  responses: { 200: json('the counts', wireOutboxStatsSchema) },
  errors: READ,
});

const listMessages = defineRoute({
  method: 'get',
  path: '/api/outbox/messages',
  operationId: 'listOutboxMessages',
  tag: 'outbox',
  summary: 'List outbox messages, newest first',
  description:
    "Filtered by state, destination and tenantId; unknown parameters are refused (400). Page by `cursor` (pass the last page's `nextCursor`; every page costs the same however deep), or by offset (the next page starts at offset + messages.length).",
  query: listOutboxQuerySchema,
  responses: { 200: json('a page of messages', r.page) },
  errors: READ,
});

const getMessage = defineRoute({
  method: 'get',
  path: '/api/outbox/messages/:id',
  operationId: 'getOutboxMessage',
  tag: 'outbox',
  summary: 'One outbox message',
  params: outboxIdParamSchema,
  query: outboxTenantQuerySchema,
  responses: { 200: json('the message', wireOutboxMessageSchema) },
  errors: ['OUTBOX_MESSAGE_NOT_FOUND', ...READ],
});

const replayMessage = defineRoute({
  method: 'post',
  path: '/api/outbox/messages/:id/replay',
  operationId: 'replayOutboxMessage',
  tag: 'outbox',
  summary: 'Publish a published or dead-lettered message again',
  description: 'Back to pending with a fresh attempt budget, replayCount + 1. 409 OUTBOX_STATE_CONFLICT while it is pending.',
  params: outboxIdParamSchema,
  query: outboxTenantQuerySchema,
  body: 'none',
  responses: { 200: json('the message, pending again', wireOutboxMessageSchema) },
  errors: ['OUTBOX_MESSAGE_NOT_FOUND', 'OUTBOX_STATE_CONFLICT', ...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'],
});

const replayDeadLetters = defineRoute({
  method: 'post',
  path: '/api/outbox/dlq/replay',
  operationId: 'replayOutboxDeadLetters',
  tag: 'outbox',
  summary: 'Replay a page of dead-lettered messages, oldest first',
  query: outboxDlqReplayQuerySchema,
  body: 'none',
  responses: { 200: json('the messages replayed', r.replayed) },
  errors: [...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'],
});

/** The resource as the OpenAPI document lists it. */
export const OUTBOX_API = {
  tag: { name: 'outbox', description: 'the transactional outbox: stats, messages, replay' },
  components: { OutboxMessage: wireOutboxMessageSchema, OutboxStats: wireOutboxStatsSchema },
  routes: [outboxStats, listMessages, getMessage, replayMessage, replayDeadLetters],
} satisfies ResourceApi;

export function outboxRoutes(baton: Baton) {
  return (
    routes()
      .add(outboxStats, async (c) => {
        const scope = scopeOf(c);
        const tenant = scope.tenant(c.req.valid('query').tenantId);
        const stats = await baton.outbox.stats(tenant === undefined ? {} : { tenantId: tenant });
        // The relay counters are this process's, over every tenant: an admin's to read.
        return c.json(toWireOutboxStats(stats, scope.tenantId === undefined ? baton.outbox.relayCounters() : null), 200);
      })
      .add(listMessages, async (c) => {
        const q = c.req.valid('query');
        const page = await baton.outbox.list({ ...q, tenantId: scopeOf(c).tenant(q.tenantId) });
        const { messages, limit, offset, nextCursor } = page;
        return c.json({ messages: messages.map(toWireOutboxMessage), limit, offset, nextCursor }, 200);
      })
      .add(getMessage, async (c) => {
        const m = await readVisible(baton, c, c.req.valid('param').id, c.req.valid('query').tenantId);
        return c.json(toWireOutboxMessage(m), 200);
      })
      // Limited to a tenant (its key's, or the one an admin names): read there first, so another tenant's is not found.
      .add(replayMessage, async (c) => {
        const { id } = c.req.valid('param');
        const given = c.req.valid('query').tenantId;
        if (scopeOf(c).tenant(given) !== undefined) await readVisible(baton, c, id, given);
        const m = await baton.outbox.replay(id);
        c.get('log').info({ outboxMessageId: m.id }, 'outbox message replayed');
        return c.json(toWireOutboxMessage(m), 200);
      })
      /** Up to `limit` (default 100, max 1000) dead letters, oldest first, back to pending. */
      .add(replayDeadLetters, async (c) => {
        const q = c.req.valid('query');
        const tenant = scopeOf(c).tenant(q.tenantId);
        const replayed = await baton.outbox.replayDeadLetters({
          ...(q.limit === undefined ? {} : { limit: q.limit }),
          ...(q.destination === undefined ? {} : { destination: q.destination }),
          ...(tenant === undefined ? {} : { tenantId: tenant }),
        });
        c.get('log').info({ count: replayed.length }, 'outbox dead letters replayed');
        return c.json({ replayed: replayed.length, messages: replayed.map(toWireOutboxMessage) }, 200);
      }).app
  );
}
