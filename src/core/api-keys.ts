// API keys bound to tenants (docs/security.md): create (the secret is returned once), list,
// revoke, and verify a presented key. Only SHA-256(secret) is stored; a key is found by its
// public id and its secret compared in constant time. Verified keys are cached in-process for
// cacheMs, so a revocation made elsewhere takes effect here within that bound.

// The default export, not a named import: tests observe that verification goes through
// timingSafeEqual by spying on this object.
import crypto from 'node:crypto';
import type { ApiKeyRecord, ApiKeyRole, ApiKeyStore } from '../driver/api-key-store.ts';
import { BatonError } from '../types/errors.ts';
import { NAME_PATTERN } from './config.ts';

export type { ApiKeyRecord, ApiKeyRole } from '../driver/api-key-store.ts';

export const API_KEY_ROLES = ['tenant', 'admin'] as const satisfies readonly ApiKeyRole[];
/** How long a verified (or unknown) key is answered from memory: the revocation bound. */
export const API_KEY_CACHE_MS_DEFAULT = 5_000;
/** Cache entries kept at most; random ids from a scanner cannot grow it without bound. */
const CACHE_MAX = 10_000;
const NAME_MAX = 200;

/** bk_<16 hex: the public id>_<43 base64url: 256 random bits>. */
const TOKEN = /^bk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** Why a presented key was refused; the caller only ever sees 401, metrics see the reason. */
/** Why ApiKeys.verify refused a token. */
export type KeyRefusal = 'malformed' | 'unknown_key' | 'revoked' | 'bad_secret';

/** What ApiKeys.verify answers: the key, or why the token was refused. */
export type VerifyResult = { ok: true; key: ApiKeyRecord } | { ok: false; reason: KeyRefusal };

/** What ApiKeys.create takes: the role, the tenant of a tenant key, and an optional name. */
export interface CreateKeyInput {
  role?: ApiKeyRole;
  /** Required for role 'tenant' (the default); not allowed for 'admin'. */
  tenantId?: string;
  name?: string;
}

/** The API key store openApiKeys opens: create, list, revoke and verify keys (docs/security.md). */
export interface ApiKeys {
  /** The new key and its token (`bk_<id>_<secret>`), which is never readable again. */
  create(input: CreateKeyInput): Promise<{ key: ApiKeyRecord; token: string }>;
  list(opts?: { tenantId?: string; includeRevoked?: boolean }): Promise<ApiKeyRecord[]>;
  /** Idempotent; takes effect in this process at once, elsewhere within cacheMs. Throws API_KEY_NOT_FOUND. */
  revoke(id: string): Promise<ApiKeyRecord>;
  /** Checks a presented token; cheap on repeat (cached for cacheMs). */
  verify(token: string): Promise<VerifyResult>;
  /** Whether any key is not revoked (cached for cacheMs). */
  anyActive(): Promise<boolean>;
  readonly cacheMs: number;
}

const sha256 = (s: string): Buffer => crypto.createHash('sha256').update(s, 'utf8').digest();

/** True when `token` has the shape of a key (it may still be unknown). */
export function looksLikeApiKey(token: string): boolean {
  return TOKEN.test(token);
}

function checkInput(input: CreateKeyInput): { role: ApiKeyRole; tenantId: string | null; name: string | null } {
  const role = input.role ?? 'tenant';
  const bad = (field: string, message: string) => new BatonError('INVALID_ARGUMENT', message, { details: { field } });
  if (!API_KEY_ROLES.includes(role)) throw bad('role', `role must be one of ${API_KEY_ROLES.join(', ')}`);
  if (role === 'tenant' && input.tenantId === undefined) throw bad('tenantId', 'a tenant key needs a tenantId');
  if (role === 'admin' && input.tenantId !== undefined) throw bad('tenantId', 'an admin key sees every tenant: give no tenantId');
  if (input.tenantId !== undefined && !NAME_PATTERN.test(input.tenantId)) throw bad('tenantId', 'tenantId is not a valid name');
  if (input.name !== undefined && (input.name.length < 1 || input.name.length > NAME_MAX || input.name.includes('\u0000'))) {
    throw bad('name', `name must be 1 to ${NAME_MAX} characters`);
  }
  return { role, tenantId: input.tenantId ?? null, name: input.name ?? null };
}

type Stored = (ApiKeyRecord & { secretSha256: Buffer }) | null;
/** A read of one key, shared by concurrent requests; `touched` once its use was recorded. */
type Entry = { at: number; read: Promise<Stored>; touched: boolean };

export function createApiKeys(store: ApiKeyStore, opts: { cacheMs?: number; now?: () => number } = {}): ApiKeys {
  const cacheMs = opts.cacheMs ?? API_KEY_CACHE_MS_DEFAULT;
  const now = opts.now ?? Date.now;
  // id -> the read of that key (shared by concurrent requests), and when it was started.
  const cache = new Map<string, Entry>();
  let active: { at: number; read: Promise<boolean> } | null = null;

  function read(id: string): Entry {
    const hit = cache.get(id);
    if (hit && now() - hit.at < cacheMs) return hit;
    cache.delete(id);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    const entry: Entry = { at: now(), read: store.apiKeyLookup(id), touched: false };
    cache.set(id, entry);
    // A failed read is not cached: the next request tries again.
    entry.read.catch(() => {
      if (cache.get(id) === entry) cache.delete(id);
    });
    return entry;
  }

  return {
    cacheMs,

    async create(input) {
      const k = checkInput(input);
      const id = crypto.randomBytes(8).toString('hex');
      const secret = crypto.randomBytes(32).toString('base64url');
      const key = await store.apiKeyInsert({ id, secretSha256: sha256(secret), ...k });
      cache.delete(id);
      active = { at: now(), read: Promise.resolve(true) };
      return { key, token: `bk_${id}_${secret}` };
    },

    list: (o = {}) => store.apiKeyList({ tenantId: o.tenantId, includeRevoked: o.includeRevoked ?? false }),

    async revoke(id) {
      const key = /^[0-9a-f]{16}$/.test(id) ? await store.apiKeyRevoke(id) : null;
      if (!key) throw new BatonError('API_KEY_NOT_FOUND', `API key ${JSON.stringify(id.slice(0, 40))} not found`, { details: { id } });
      cache.delete(id);
      active = null;
      return key;
    },

    async verify(token) {
      const m = TOKEN.exec(token);
      if (!m) return { ok: false, reason: 'malformed' };
      const [, id, secret] = m as unknown as [string, string, string];
      const entry = read(id);
      const stored = await entry.read;
      if (!stored) return { ok: false, reason: 'unknown_key' };
      // Compared before the revocation check, so a revoked key's answer costs the same.
      const match = crypto.timingSafeEqual(sha256(secret), stored.secretSha256);
      if (!match) return { ok: false, reason: 'bad_secret' };
      if (stored.revokedAt !== null) return { ok: false, reason: 'revoked' };
      const { secretSha256: _, ...key } = stored;
      // Once per cache entry, best effort: a failed bump must not fail the request.
      if (!entry.touched) {
        entry.touched = true;
        store.apiKeyTouch(id).catch(() => undefined);
      }
      return { ok: true, key };
    },

    anyActive() {
      if (!active || now() - active.at >= cacheMs) {
        const entry = { at: now(), read: store.apiKeyAnyActive() };
        active = entry;
        entry.read.catch(() => {
          if (active === entry) active = null;
        });
      }
      return active.read;
    },
  };
}
