// The /api/outbox routes as the OpenAPI document describes them (one entry per route of
// routes/outbox.ts). Built by openapi-routes.ts, which lends its helpers.

import type { OperationDoc } from './openapi.ts';
import type { OperationHelpers } from './openapi-ops.ts';
import {
  listOutboxQuerySchema,
  outboxDlqReplayQuerySchema,
  outboxIdParamSchema,
  outboxTenantQuerySchema,
  outboxResponseSchemas as r,
  wireOutboxMessageSchema,
  wireOutboxStatsSchema,
} from './outbox-schemas.ts';

export const OUTBOX_TAG = { name: 'outbox', description: 'the transactional outbox: stats, messages, replay' };
export const OUTBOX_COMPONENTS = { OutboxMessage: wireOutboxMessageSchema, OutboxStats: wireOutboxStatsSchema };

export function outboxOperations({ route, json, noBody, BODY, ENGINE }: OperationHelpers): OperationDoc[] {
  return [
    route({
      method: 'get',
      path: '/api/outbox/stats',
      operationId: 'outboxStats',
      tag: 'outbox',
      summary: 'Outbox counts by destination and state, and the oldest pending age',
      query: outboxTenantQuerySchema,
      responses: { 200: json('the counts', wireOutboxStatsSchema) },
      errors: ENGINE,
    }),
    route({
      method: 'get',
      path: '/api/outbox/messages',
      operationId: 'listOutboxMessages',
      tag: 'outbox',
      summary: 'List outbox messages, newest first',
      description: 'Filtered by state, destination and tenantId; unknown parameters are refused (400).',
      query: listOutboxQuerySchema,
      responses: { 200: json('a page of messages', r.page) },
      errors: ENGINE,
    }),
    route({
      method: 'get',
      path: '/api/outbox/messages/:id',
      operationId: 'getOutboxMessage',
      tag: 'outbox',
      summary: 'One outbox message',
      params: outboxIdParamSchema,
      query: outboxTenantQuerySchema,
      responses: { 200: json('the message', wireOutboxMessageSchema) },
      errors: ['OUTBOX_MESSAGE_NOT_FOUND', ...ENGINE],
    }),
    route({
      method: 'post',
      path: '/api/outbox/messages/:id/replay',
      operationId: 'replayOutboxMessage',
      tag: 'outbox',
      summary: 'Publish a published or dead-lettered message again',
      description: 'Back to pending with a fresh attempt budget, replayCount + 1. 409 OUTBOX_STATE_CONFLICT while it is pending.',
      params: outboxIdParamSchema,
      query: outboxTenantQuerySchema,
      body: noBody,
      responses: { 200: json('the message, pending again', wireOutboxMessageSchema) },
      errors: ['OUTBOX_MESSAGE_NOT_FOUND', 'OUTBOX_STATE_CONFLICT', ...BODY, ...ENGINE],
    }),
    route({
      method: 'post',
      path: '/api/outbox/dlq/replay',
      operationId: 'replayOutboxDeadLetters',
      tag: 'outbox',
      summary: 'Replay a page of dead-lettered messages, oldest first',
      query: outboxDlqReplayQuerySchema,
      body: noBody,
      responses: { 200: json('the messages replayed', r.replayed) },
      errors: [...BODY, ...ENGINE],
    }),
  ];
}
