// /api/keys: create, list and revoke API keys (admin only: ADMIN_ONLY_PATHS in tenant-scope.ts),
// each route declared once (route-spec.ts). Without API keys on the app they answer 404 ROUTE_NOT_FOUND.

import type { ApiKeys } from '../../index.ts';
import { ApiError } from '../errors.ts';
import { BODY, ENGINE, GUARDED, WRITE } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import {
  createKeyBodySchema,
  keyIdParamSchema,
  listKeysQuerySchema,
  keyResponseSchemas as r,
  toWireKey,
  wireKeySchema,
} from './schemas.ts';

const createKey = defineRoute({
  method: 'post',
  path: '/api/keys',
  operationId: 'createApiKey',
  tag: 'keys',
  summary: 'Create an API key',
  description: 'The token in the answer is shown this once; only a hash of its secret is stored.',
  body: { schema: createKeyBodySchema, required: true },
  responses: { 201: json('created', r.created) },
  errors: ['ROUTE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'],
});

const listKeys = defineRoute({
  method: 'get',
  path: '/api/keys',
  operationId: 'listApiKeys',
  tag: 'keys',
  summary: 'List API keys (never their secrets)',
  query: listKeysQuerySchema,
  responses: { 200: json('the keys, oldest first', r.list) },
  errors: ['ROUTE_NOT_FOUND', ...ENGINE, ...GUARDED, 'ADMIN_REQUIRED'],
});

const revokeKey = defineRoute({
  method: 'post',
  path: '/api/keys/:id/revoke',
  operationId: 'revokeApiKey',
  tag: 'keys',
  summary: 'Revoke an API key',
  description: 'Idempotent. This server refuses the key at once, others within their key cache time (5 s by default).',
  params: keyIdParamSchema,
  body: 'none',
  responses: { 200: json('the key, revoked', r.one) },
  errors: ['API_KEY_NOT_FOUND', 'ROUTE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'],
});

/** The resource as the OpenAPI document lists it. */
export const KEY_API = {
  tag: { name: 'keys', description: 'API keys bound to tenants (admin keys only; docs/security.md)' },
  components: { ApiKey: wireKeySchema },
  routes: [createKey, listKeys, revokeKey],
} satisfies ResourceApi;

export function keyRoutes(apiKeys: ApiKeys | undefined, maxJsonDepth: number) {
  const keys = (): ApiKeys => {
    if (!apiKeys) throw new ApiError('ROUTE_NOT_FOUND', 'API keys are not configured on this server');
    return apiKeys;
  };
  return (
    routes({ maxJsonDepth })
      .add(createKey, async (c) => {
        // The token is in this answer only: it is never shown again.
        const { key, token } = await keys().create(c.req.valid('json'));
        c.get('log').info({ keyId: key.id, role: key.role, tenantId: key.tenantId }, 'API key created');
        return c.json({ key: toWireKey(key), token }, 201);
      })
      .add(listKeys, async (c) => {
        const q = c.req.valid('query');
        const list = await keys().list({ ...(q.tenantId ? { tenantId: q.tenantId } : {}), includeRevoked: q.includeRevoked === 'true' });
        return c.json({ keys: list.map(toWireKey) }, 200);
      })
      // Idempotent; this process refuses the key at once, others within the key cache time.
      .add(revokeKey, async (c) => {
        const key = await keys().revoke(c.req.valid('param').id);
        c.get('log').info({ keyId: key.id }, 'API key revoked');
        return c.json({ key: toWireKey(key) }, 200);
      }).app
  );
}
