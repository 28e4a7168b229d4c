// Conformance of the api_keys store (PgApiKeyStore) on a real database, method by method:
// insert and lookup (digest included), list by tenant with or without revoked keys, revoke
// once (a second keeps the first time), whether any key is active, and touch at most once a
// minute per key.

import crypto from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { PgApiKeyStore } from '../../src/db/pg/api-key-store.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();
let store: PgApiKeyStore;
beforeAll(() => {
  store = new PgApiKeyStore(db.pool, quoteSchema(db.schema));
});

let seq = 0;
const digest = () => crypto.createHash('sha256').update(String(++seq)).digest();
const key = (over: { role?: 'tenant' | 'admin'; tenantId?: string | null; name?: string | null } = {}) => ({
  id: (++seq).toString(16).padStart(16, '0'),
  secretSha256: digest(),
  role: over.role ?? ('tenant' as const),
  tenantId: over.tenantId === undefined ? 'acme' : over.tenantId,
  name: over.name ?? null,
});
const lastUsed = async (id: string) =>
  (await db.query<{ t: Date | null }>(`SELECT last_used_at AS t FROM ${db.schema}.api_keys WHERE id = $1`, [id])).rows[0]?.t;

describe('PgApiKeyStore', () => {
  it('apiKeyInsert stores the key; apiKeyLookup answers it with its digest, and null for an unknown id', async () => {
    const k = key({ name: 'ci' });
    const rec = await store.apiKeyInsert(k);
    expect(rec).toMatchObject({ id: k.id, role: 'tenant', tenantId: 'acme', name: 'ci', lastUsedAt: null, revokedAt: null });
    expect(rec.createdAt).toBeInstanceOf(Date);
    const found = await store.apiKeyLookup(k.id);
    expect(found?.secretSha256.equals(k.secretSha256)).toBe(true);
    expect(found).toMatchObject({ id: k.id, role: 'tenant', tenantId: 'acme' });
    expect(await store.apiKeyLookup('ffffffffffffffff')).toBeNull();
  });

  it('apiKeyList answers a tenant its keys, revoked ones only when asked; apiKeyRevoke keeps the first time', async () => {
    const tenant = `t${++seq}`;
    const a = await store.apiKeyInsert(key({ tenantId: tenant }));
    const b = await store.apiKeyInsert(key({ tenantId: tenant }));
    await store.apiKeyInsert(key({ tenantId: `other${seq}` }));
    const revoked = await store.apiKeyRevoke(b.id);
    expect(revoked?.revokedAt).toBeInstanceOf(Date);
    const again = await store.apiKeyRevoke(b.id);
    expect(again?.revokedAt?.getTime()).toBe(revoked?.revokedAt?.getTime());
    expect(await store.apiKeyRevoke('ffffffffffffffff')).toBeNull();
    expect((await store.apiKeyList({ tenantId: tenant, includeRevoked: false })).map((r) => r.id)).toEqual([a.id]);
    expect((await store.apiKeyList({ tenantId: tenant, includeRevoked: true })).map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
    const all = await store.apiKeyList({ includeRevoked: true });
    expect(all.map((r) => r.id)).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(JSON.stringify(all)).not.toContain('secretSha256');
  });

  it('apiKeyAnyActive is false once every key is revoked, and true with one active', async () => {
    for (const r of await store.apiKeyList({ includeRevoked: false })) await store.apiKeyRevoke(r.id);
    expect(await store.apiKeyAnyActive()).toBe(false);
    const k = await store.apiKeyInsert(key({ role: 'admin', tenantId: null }));
    expect(await store.apiKeyAnyActive()).toBe(true);
    await store.apiKeyRevoke(k.id);
    expect(await store.apiKeyAnyActive()).toBe(false);
  });

  it('apiKeyTouch sets last_used_at, and leaves it alone within a minute of the last touch', async () => {
    const k = await store.apiKeyInsert(key());
    await store.apiKeyTouch(k.id);
    const first = await lastUsed(k.id);
    expect(first).toBeInstanceOf(Date);
    await store.apiKeyTouch(k.id);
    expect((await lastUsed(k.id))?.getTime()).toBe(first?.getTime());
    // Over a minute ago: the next touch moves it.
    await db.query(`UPDATE ${db.schema}.api_keys SET last_used_at = now() - interval '2 minutes' WHERE id = $1`, [k.id]);
    const old = await lastUsed(k.id);
    await store.apiKeyTouch(k.id);
    expect((await lastUsed(k.id))!.getTime()).toBeGreaterThan(old!.getTime());
  });
});
