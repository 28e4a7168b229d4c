// The /api/flow routes as the OpenAPI document describes them (one entry per route of
// routes/flow.ts). Built by openapi-routes.ts, which lends its helpers.

import {
  flowLimitsBodySchema,
  flowQueueParamSchema,
  keyLimitsBodySchema,
  keyPatternQuerySchema,
  flowResponseSchemas as r,
  tenantParamSchema,
  tenantWeightBodySchema,
} from './flow-schemas.ts';
import type { OperationDoc } from './openapi.ts';
import type { OperationHelpers } from './openapi-ops.ts';

export const FLOW_TAG = { name: 'flow', description: 'flow control: fair dispatch weights, concurrency caps and rate limits' };

export function flowOperations({ route, json, noBody, BODY, ENGINE }: OperationHelpers): OperationDoc[] {
  return [
    route({
      method: 'get',
      path: '/api/flow',
      operationId: 'flowState',
      tag: 'flow',
      summary: 'Limits, buckets, per-tenant and per-key pending and running counts, and due jobs held back by caps and rate limits',
      responses: { 200: json('the flow snapshot', r.snapshot) },
      errors: ENGINE,
    }),
    route({
      method: 'put',
      path: '/api/flow/queues/:queue',
      operationId: 'setQueueLimits',
      tag: 'flow',
      summary: "Set a queue's fleet-wide concurrency cap and rate limit",
      description: 'Replaces both; null lifts one. Every worker process obeys from its next claim.',
      params: flowQueueParamSchema,
      body: { schema: flowLimitsBodySchema, required: true },
      responses: { 200: json('the limits as set', r.queueLimits) },
      errors: [...BODY, ...ENGINE],
    }),
    route({
      method: 'put',
      path: '/api/flow/keys',
      operationId: 'setKeyLimits',
      tag: 'flow',
      summary: "Set the limits of a concurrency key, or of every key with a prefix ('vendor:*')",
      description: "The most specific pattern applies; a job's own concurrencyLimit caps its key before any pattern.",
      body: { schema: keyLimitsBodySchema, required: true },
      responses: { 200: json('the limits as set', r.keyLimits) },
      errors: [...BODY, ...ENGINE],
    }),
    route({
      method: 'delete',
      path: '/api/flow/keys',
      operationId: 'removeKeyLimits',
      tag: 'flow',
      summary: "Lift a key pattern's limits",
      query: keyPatternQuerySchema,
      body: noBody,
      responses: { 200: json('removed', r.keyRemoved) },
      errors: ['KEY_PATTERN_NOT_FOUND', ...BODY, ...ENGINE],
    }),
    route({
      method: 'put',
      path: '/api/flow/tenants/:tenantId',
      operationId: 'setTenantWeight',
      tag: 'flow',
      summary: "Set a tenant's weight in every queue's round-robin",
      params: tenantParamSchema,
      body: { schema: tenantWeightBodySchema, required: true },
      responses: { 200: json('the weight as set', r.weight) },
      errors: [...BODY, ...ENGINE],
    }),
  ];
}
