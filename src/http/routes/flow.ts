// /api/flow: flow control's limits and weights, read and set. Limits live in the database, so
// every worker process obeys a change from its next claim.

import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import type { Baton } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { validationHook } from '../errors.ts';
import {
  flowLimitsBodySchema,
  flowQueueParamSchema,
  keyLimitsBodySchema,
  keyPatternQuerySchema,
  tenantParamSchema,
  tenantWeightBodySchema,
} from '../flow-schemas.ts';
import { jsonBody, noBody } from '../json-body.ts';
import { BODY, ENGINE, fails, GUARDED, WRITE } from '../route-errors.ts';

/** Flow control is fleet-wide: admin only. */
const FLOW_WRITE = [...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'] as const;

export function flowRoutes(baton: Baton, maxJsonDepth: number) {
  return new Hono<AppEnv>()
    .get('/', fails(...ENGINE, ...GUARDED, 'ADMIN_REQUIRED'), async (c) => c.json(await baton.admin.flow(), 200))
    .put(
      '/queues/:queue',
      fails(...FLOW_WRITE),
      jsonBody(maxJsonDepth),
      zValidator('param', flowQueueParamSchema, validationHook),
      zValidator('json', flowLimitsBodySchema, validationHook),
      async (c) => {
        const set = await baton.admin.setQueueLimits(c.req.valid('param').queue, c.req.valid('json'));
        c.get('log').info(set, 'queue limits set');
        return c.json(set, 200);
      },
    )
    .put('/keys', fails(...FLOW_WRITE), jsonBody(maxJsonDepth), zValidator('json', keyLimitsBodySchema, validationHook), async (c) => {
      const { pattern, ...limits } = c.req.valid('json');
      const set = await baton.admin.setKeyLimits(pattern, limits);
      c.get('log').info(set, 'key limits set');
      return c.json(set, 200);
    })
    .delete(
      '/keys',
      fails('KEY_PATTERN_NOT_FOUND', ...FLOW_WRITE),
      noBody(),
      zValidator('query', keyPatternQuerySchema, validationHook),
      async (c) => {
        const { pattern } = c.req.valid('query');
        await baton.admin.deleteKeyLimits(pattern);
        c.get('log').info({ pattern }, 'key limits removed');
        return c.json({ pattern, removed: true as const }, 200);
      },
    )
    .put(
      '/tenants/:tenantId',
      fails(...FLOW_WRITE),
      jsonBody(maxJsonDepth),
      zValidator('param', tenantParamSchema, validationHook),
      zValidator('json', tenantWeightBodySchema, validationHook),
      async (c) => {
        const set = await baton.admin.setTenantWeight(c.req.valid('param').tenantId, c.req.valid('json').weight);
        c.get('log').info(set, 'tenant weight set');
        return c.json(set, 200);
      },
    );
}
