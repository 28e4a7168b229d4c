// API keys on a real database: create returns the token once and stores only SHA-256 of its
// secret; verify finds a key by its public id and compares in constant time (through
// crypto.timingSafeEqual); revoke takes effect at once in the process that revoked, and
// within cacheMs in another.

import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ClosableApiKeys, openApiKeys } from '../../src/create-api-keys.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
let keys: ClosableApiKeys;
/** Another process's view of the same table, with a short cache. */
let other: ClosableApiKeys;
beforeAll(() => {
  keys = openApiKeys({ pool: db.pool, schema: db.schema });
  other = openApiKeys({ pool: db.pool, schema: db.schema, cacheMs: 200 });
});
afterAll(async () => {
  await keys.close();
  await other.close();
});
afterEach(() => vi.restoreAllMocks());

describe('API keys', () => {
  it('create answers the token once and stores only the SHA-256 of its secret', async () => {
    const { key, token } = await keys.create({ tenantId: 'acme', name: 'ci' });
    expect(key).toMatchObject({ role: 'tenant', tenantId: 'acme', name: 'ci', revokedAt: null });
    expect(token).toMatch(new RegExp(`^bk_${key.id}_[A-Za-z0-9_-]{43}$`));
    const secret = token.slice(`bk_${key.id}_`.length);
    const row = (await db.query(`SELECT * FROM ${db.schema}.api_keys WHERE id = $1`, [key.id])).rows[0];
    expect(row.secret_sha256.equals(crypto.createHash('sha256').update(secret).digest())).toBe(true);
    // The secret appears nowhere in the row.
    expect(JSON.stringify(row)).not.toContain(secret);
    expect(await keys.list({ tenantId: 'acme' })).toEqual([expect.objectContaining({ id: key.id })]);
    expect(JSON.stringify(await keys.list())).not.toContain(secret);
  });

  it('verify accepts the token, and refuses a wrong secret, an unknown id and garbage, with a reason', async () => {
    const { key, token } = await keys.create({ tenantId: 'acme' });
    expect(await keys.verify(token)).toEqual({ ok: true, key: expect.objectContaining({ id: key.id, tenantId: 'acme' }) });
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect(await keys.verify(flipped)).toEqual({ ok: false, reason: 'bad_secret' });
    expect(await keys.verify(`bk_0123456789abcdef_${'x'.repeat(43)}`)).toEqual({ ok: false, reason: 'unknown_key' });
    expect(await keys.verify('hunter2')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('compares the secret with crypto.timingSafeEqual, on digests of equal length', async () => {
    const { token } = await keys.create({ tenantId: 'acme' });
    const spy = vi.spyOn(crypto, 'timingSafeEqual');
    await keys.verify(token);
    await keys.verify(token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA'));
    expect(spy).toHaveBeenCalledTimes(2);
    for (const [a, b] of spy.mock.calls) expect([(a as Buffer).length, (b as Buffer).length]).toEqual([32, 32]);
  });

  it('refuses bad input: a tenant key without a tenant, an admin key with one, a bad name', async () => {
    await expect(keys.create({})).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(keys.create({ role: 'admin', tenantId: 'acme' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(keys.create({ tenantId: 'a b' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(keys.create({ role: 'root' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const admin = await keys.create({ role: 'admin' });
    expect(admin.key).toMatchObject({ role: 'admin', tenantId: null });
  });

  it('revoke is immediate where it is made and within cacheMs elsewhere; unknown ids are API_KEY_NOT_FOUND', async () => {
    const { key, token } = await keys.create({ tenantId: 'acme' });
    expect((await other.verify(token)).ok).toBe(true); // now cached in `other`
    const revoked = await keys.revoke(key.id);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    expect(await keys.verify(token)).toEqual({ ok: false, reason: 'revoked' });
    await waitFor(async () => (await other.verify(token)).ok === false, { timeoutMs: 5_000 });
    expect(await other.verify(token)).toEqual({ ok: false, reason: 'revoked' });
    // Idempotent: the first revocation time stays.
    expect((await keys.revoke(key.id)).revokedAt).toEqual(revoked.revokedAt);
    await expect(keys.revoke('0000000000000000')).rejects.toMatchObject({ code: 'API_KEY_NOT_FOUND' });
    await expect(keys.revoke('nope')).rejects.toMatchObject({ code: 'API_KEY_NOT_FOUND' });
    expect((await keys.list()).map((k) => k.id)).not.toContain(key.id);
    expect((await keys.list({ includeRevoked: true })).map((k) => k.id)).toContain(key.id);
  });
});
