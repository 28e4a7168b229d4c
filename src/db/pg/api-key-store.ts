// ApiKeyStore on node-postgres: runs the named api_keys queries and maps rows.

import type { ApiKeyRecord, ApiKeyRole, ApiKeyStore } from '../../driver/api-key-store.ts';
import { translatePgError } from './errors.ts';
import type { Queryable, QueryConfigLike } from './pool.ts';
import { apiKeyQueries } from './queries/api-key.ts';

interface ApiKeyRow {
  id: string;
  role: ApiKeyRole;
  tenant_id: string | null;
  name: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const toRecord = (r: ApiKeyRow): ApiKeyRecord => ({
  id: r.id,
  role: r.role,
  tenantId: r.tenant_id,
  name: r.name,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  revokedAt: r.revoked_at,
});

export class PgApiKeyStore implements ApiKeyStore {
  readonly #q: ReturnType<typeof apiKeyQueries>;
  readonly #pool: Queryable;
  constructor(pool: Queryable, quotedSchema: string) {
    this.#pool = pool;
    this.#q = apiKeyQueries(quotedSchema);
  }

  async #rows<R>(query: QueryConfigLike, values: unknown[]): Promise<R[]> {
    try {
      return (await this.#pool.query<R>({ ...query, values })).rows;
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async apiKeyInsert(k: Parameters<ApiKeyStore['apiKeyInsert']>[0]): Promise<ApiKeyRecord> {
    const [row] = await this.#rows<ApiKeyRow>(this.#q.insert, [k.id, k.secretSha256, k.role, k.tenantId, k.name]);
    return toRecord(row!);
  }

  async apiKeyLookup(id: string) {
    const [row] = await this.#rows<ApiKeyRow & { secret_sha256: Buffer }>(this.#q.lookup, [id]);
    return row ? { ...toRecord(row), secretSha256: row.secret_sha256 } : null;
  }

  async apiKeyList(p: { tenantId?: string | undefined; includeRevoked: boolean }): Promise<ApiKeyRecord[]> {
    return (await this.#rows<ApiKeyRow>(this.#q.list, [p.tenantId ?? null, p.includeRevoked])).map(toRecord);
  }

  async apiKeyRevoke(id: string): Promise<ApiKeyRecord | null> {
    const [row] = await this.#rows<ApiKeyRow>(this.#q.revoke, [id]);
    return row ? toRecord(row) : null;
  }

  async apiKeyAnyActive(): Promise<boolean> {
    const [row] = await this.#rows<{ any: boolean }>(this.#q.anyActive, []);
    return row?.any === true;
  }

  async apiKeyTouch(id: string): Promise<void> {
    await this.#rows(this.#q.touch, [id]);
  }
}
