// /api/flow: flow control's limits and weights, read and set, each route declared once
// (route-spec.ts). Fleet-wide, so admin only (ADMIN_ONLY_PATHS); limits live in the database,
// so every worker process obeys a change from its next claim.

import type { Baton } from '../../index.ts';
import { BODY, ENGINE, GUARDED, WRITE } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import {
  flowLimitsBodySchema,
  flowQueueParamSchema,
  keyLimitsBodySchema,
  keyPatternQuerySchema,
  flowResponseSchemas as r,
  tenantParamSchema,
  tenantWeightBodySchema,
} from './schemas.ts';

/** A tenant key gets 403 ADMIN_REQUIRED. */
const FLOW_WRITE = [...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'] as const;

const flowState = defineRoute({
  method: 'get',
  path: '/api/flow',
  operationId: 'flowState',
  tag: 'flow',
  summary: 'Limits, buckets, per-tenant and per-key pending and running counts, and due jobs held back by caps and rate limits',
  responses: { 200: json('the flow snapshot', r.snapshot) },
  errors: [...ENGINE, ...GUARDED, 'ADMIN_REQUIRED'],
});

const setQueueLimits = defineRoute({
  method: 'put',
  path: '/api/flow/queues/:queue',
  operationId: 'setQueueLimits',
  tag: 'flow',
  summary: "Set a queue's fleet-wide concurrency cap and rate limit",
  description: 'Replaces both; null lifts one. Every worker process obeys from its next claim.',
  params: flowQueueParamSchema,
  body: { schema: flowLimitsBodySchema, required: true },
  responses: { 200: json('the limits as set', r.queueLimits) },
  errors: FLOW_WRITE,
});

const setKeyLimits = defineRoute({
  method: 'put',
  path: '/api/flow/keys',
  operationId: 'setKeyLimits',
  tag: 'flow',
  summary: "Set the limits of a concurrency key, or of every key with a prefix ('vendor:*')",
  description: "The most specific pattern applies; a job's own concurrencyLimit caps its key before any pattern.",
  body: { schema: keyLimitsBodySchema, required: true },
  responses: { 200: json('the limits as set', r.keyLimits) },
  errors: FLOW_WRITE,
});

const removeKeyLimits = defineRoute({
  method: 'delete',
  path: '/api/flow/keys',
  operationId: 'removeKeyLimits',
  tag: 'flow',
  summary: "Lift a key pattern's limits",
  query: keyPatternQuerySchema,
  body: 'none',
  responses: { 200: json('removed', r.keyRemoved) },
  errors: ['KEY_PATTERN_NOT_FOUND', ...FLOW_WRITE],
});

const setTenantWeight = defineRoute({
  method: 'put',
  path: '/api/flow/tenants/:tenantId',
  operationId: 'setTenantWeight',
  tag: 'flow',
  summary: "Set a tenant's weight in every queue's round-robin",
  params: tenantParamSchema,
  body: { schema: tenantWeightBodySchema, required: true },
  responses: { 200: json('the weight as set', r.weight) },
  errors: FLOW_WRITE,
});

/** The resource as the OpenAPI document lists it. */
export const FLOW_API = {
  tag: { name: 'flow', description: 'flow control: fair dispatch weights, concurrency caps and rate limits' },
  routes: [flowState, setQueueLimits, setKeyLimits, removeKeyLimits, setTenantWeight],
} satisfies ResourceApi;

export function flowRoutes(baton: Baton, maxJsonDepth: number) {
  return routes({ maxJsonDepth })
    .add(flowState, async (c) => c.json(await baton.admin.flow(), 200))
    .add(setQueueLimits, async (c) => {
      const set = await baton.admin.setQueueLimits(c.req.valid('param').queue, c.req.valid('json'));
      c.get('log').info(set, 'queue limits set');
      return c.json(set, 200);
    })
    .add(setKeyLimits, async (c) => {
      const { pattern, ...limits } = c.req.valid('json');
      const set = await baton.admin.setKeyLimits(pattern, limits);
      c.get('log').info(set, 'key limits set');
      return c.json(set, 200);
    })
    .add(removeKeyLimits, async (c) => {
      const { pattern } = c.req.valid('query');
      await baton.admin.deleteKeyLimits(pattern);
      c.get('log').info({ pattern }, 'key limits removed');
      return c.json({ pattern, removed: true as const }, 200);
    })
    .add(setTenantWeight, async (c) => {
      const set = await baton.admin.setTenantWeight(c.req.valid('param').tenantId, c.req.valid('json').weight);
      c.get('log').info(set, 'tenant weight set');
      return c.json(set, 200);
    }).app;
}
