// API keys over HTTP (admin only): the zod contracts of the requests and answers, and the
// mapping of a key onto the wire. A key's secret is on the wire once, in the create answer.

import { z } from 'zod';
import { API_KEY_ROLES } from '../../core/api-keys.ts';
import type { ApiKeyRecord } from '../../index.ts';
import { nameSchema } from '../schemas.ts';

export const createKeyBodySchema = z.strictObject({
  role: z.enum(API_KEY_ROLES).optional().meta({ description: 'default tenant' }),
  tenantId: nameSchema.optional().meta({ description: 'required for a tenant key, refused for an admin key' }),
  name: z
    .string()
    .min(1)
    .max(200)
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL bytes')
    .optional()
    .meta({ description: 'what the key is for, shown in listings' }),
});

export const listKeysQuerySchema = z
  .object({
    tenantId: nameSchema.optional(),
    includeRevoked: z.enum(['true', 'false']).optional().meta({ description: 'default false' }),
  })
  .strict();

/** Any string: one that names no key answers 404 API_KEY_NOT_FOUND. */
export const keyIdParamSchema = z.object({ id: z.string().meta({ description: 'the key id (16 hex digits)' }) });

const time = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  .meta({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds (Date#toISOString)' });

export const wireKeySchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{16}$/),
  role: z.enum(API_KEY_ROLES),
  tenantId: z.string().nullable().meta({ description: 'null for an admin key' }),
  name: z.string().nullable(),
  createdAt: time,
  lastUsedAt: time.nullable().meta({ description: 'updated at most once a minute per process' }),
  revokedAt: time.nullable(),
});

export const keyResponseSchemas = {
  created: z.strictObject({
    key: wireKeySchema,
    token: z.string().meta({ description: 'bk_<id>_<secret>: shown this once, stored only as a hash' }),
  }),
  list: z.strictObject({ keys: z.array(wireKeySchema) }),
  one: z.strictObject({ key: wireKeySchema }),
};

export function toWireKey(k: ApiKeyRecord): z.output<typeof wireKeySchema> {
  return {
    id: k.id,
    role: k.role,
    tenantId: k.tenantId,
    name: k.name,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
  };
}
