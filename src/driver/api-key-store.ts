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
  insert(k: { id: string; secretSha256: Buffer; role: ApiKeyRole; tenantId: string | null; name: string | null }): Promise<ApiKeyRecord>;
  /** The key and its digest, revoked or not; null for an unknown id. */
  lookup(id: string): Promise<(ApiKeyRecord & { secretSha256: Buffer }) | null>;
  list(p: { tenantId?: string | undefined; includeRevoked: boolean }): Promise<ApiKeyRecord[]>;
  /** Sets revoked_at once (a second revoke keeps the first time); null for an unknown id. */
  revoke(id: string): Promise<ApiKeyRecord | null>;
  /** Whether any key is not revoked. */
  anyActive(): Promise<boolean>;
  /** Bumps last_used_at, at most once a minute per key (so a busy key is not a write per request). */
  touch(id: string): Promise<void>;
}
