// /api/keys: create, list and revoke API keys (admin only: ADMIN_ONLY_PATHS in tenant-scope.ts).
// Without API keys configured on the app the routes answer 404 ROUTE_NOT_FOUND.

import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import type { ApiKeys } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { ApiError, validationHook } from '../errors.ts';
import { jsonBody, noBody } from '../json-body.ts';
import { createKeyBodySchema, keyIdParamSchema, listKeysQuerySchema, toWireKey } from '../key-schemas.ts';
import { BODY, ENGINE, fails, GUARDED, WRITE } from '../route-errors.ts';

export function keyRoutes(apiKeys: ApiKeys | undefined, maxJsonDepth: number) {
  const keys = (): ApiKeys => {
    if (!apiKeys) throw new ApiError('ROUTE_NOT_FOUND', 'API keys are not configured on this server');
    return apiKeys;
  };
  return (
    new Hono<AppEnv>()
      /** 201 with the key and its token, which is never shown again. */
      .post(
        '/',
        fails('ROUTE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'),
        jsonBody(maxJsonDepth),
        zValidator('json', createKeyBodySchema, validationHook),
        async (c) => {
          const { key, token } = await keys().create(c.req.valid('json'));
          c.get('log').info({ keyId: key.id, role: key.role, tenantId: key.tenantId }, 'API key created');
          return c.json({ key: toWireKey(key), token }, 201);
        },
      )
      .get(
        '/',
        fails('ROUTE_NOT_FOUND', ...ENGINE, ...GUARDED, 'ADMIN_REQUIRED'),
        zValidator('query', listKeysQuerySchema, validationHook),
        async (c) => {
          const q = c.req.valid('query');
          const list = await keys().list({ ...(q.tenantId ? { tenantId: q.tenantId } : {}), includeRevoked: q.includeRevoked === 'true' });
          return c.json({ keys: list.map(toWireKey) }, 200);
        },
      )
      /** Idempotent; this process refuses the key at once, others within the key cache time. */
      .post(
        '/:id/revoke',
        fails('API_KEY_NOT_FOUND', 'ROUTE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'),
        noBody(),
        zValidator('param', keyIdParamSchema, validationHook),
        async (c) => {
          const key = await keys().revoke(c.req.valid('param').id);
          c.get('log').info({ keyId: key.id }, 'API key revoked');
          return c.json({ key: toWireKey(key) }, 200);
        },
      )
  );
}
