// The /api/keys routes as the OpenAPI document describes them (one entry per route of
// routes/keys.ts). Built by openapi-routes.ts, which lends its helpers.

import { createKeyBodySchema, keyIdParamSchema, listKeysQuerySchema, keyResponseSchemas as r, wireKeySchema } from './key-schemas.ts';
import type { OperationDoc } from './openapi.ts';
import type { OperationHelpers } from './openapi-workflows.ts';

export const KEY_TAG = { name: 'keys', description: 'API keys bound to tenants (admin keys only; docs/security.md)' };
export const KEY_COMPONENTS = { ApiKey: wireKeySchema };

export function keyOperations({ route, json, noBody, BODY, ENGINE }: OperationHelpers): OperationDoc[] {
  return [
    route({
      method: 'post',
      path: '/api/keys',
      operationId: 'createApiKey',
      tag: 'keys',
      summary: 'Create an API key',
      description: 'The token in the answer is shown this once; only a hash of its secret is stored.',
      body: { schema: createKeyBodySchema, required: true },
      responses: { 201: json('created', r.created) },
      errors: ['ROUTE_NOT_FOUND', ...BODY, ...ENGINE],
    }),
    route({
      method: 'get',
      path: '/api/keys',
      operationId: 'listApiKeys',
      tag: 'keys',
      summary: 'List API keys (never their secrets)',
      query: listKeysQuerySchema,
      responses: { 200: json('the keys, oldest first', r.list) },
      errors: ['ROUTE_NOT_FOUND', ...ENGINE],
    }),
    route({
      method: 'post',
      path: '/api/keys/:id/revoke',
      operationId: 'revokeApiKey',
      tag: 'keys',
      summary: 'Revoke an API key',
      description: 'Idempotent. This server refuses the key at once, others within their key cache time (5 s by default).',
      params: keyIdParamSchema,
      body: noBody,
      responses: { 200: json('the key, revoked', r.one) },
      errors: ['API_KEY_NOT_FOUND', 'ROUTE_NOT_FOUND', ...BODY, ...ENGINE],
    }),
  ];
}
