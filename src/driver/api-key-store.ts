// The seam between API keys (src/core/api-keys.ts) and the api_keys table: one method per
// operation. Secrets never pass through here, only their SHA-256 digests.
// @internal — not a public API.

/** An API key's role: 'tenant' sees one tenant's jobs, 'admin' everything (docs/security.md). */
export type ApiKeyRole = 'tenant' | 'admin';

/** A key as stored, without its digest. */
export interface ApiKeyRecord {
  id: string;
  role: ApiKeyRole;
  /** Set for role 'tenant', null for 'admin'. */
  tenantId: string | null;
  name: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface ApiKeyStore {
  apiKeyInsert(k: {
    id: string;
    secretSha256: Buffer;
    role: ApiKeyRole;
    tenantId: string | null;
    name: string | null;
  }): Promise<ApiKeyRecord>;
  /** The key and its digest, revoked or not; null for an unknown id. */
  apiKeyLookup(id: string): Promise<(ApiKeyRecord & { secretSha256: Buffer }) | null>;
  apiKeyList(p: { tenantId?: string | undefined; includeRevoked: boolean }): Promise<ApiKeyRecord[]>;
  /** Sets revoked_at once (a second revoke keeps the first time); null for an unknown id. */
  apiKeyRevoke(id: string): Promise<ApiKeyRecord | null>;
  /** Whether any key is not revoked. */
  apiKeyAnyActive(): Promise<boolean>;
  /** Bumps last_used_at, at most once a minute per key (so a busy key is not a write per request). */
  apiKeyTouch(id: string): Promise<void>;
}
