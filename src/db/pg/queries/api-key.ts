// Named queries for the api_keys table (docs/security.md).

import { statementName } from './statement-name.ts';

const COLUMNS = 'id, role, tenant_id, name, created_at, last_used_at, revoked_at';

export function apiKeyQueries(schema: string) {
  const t = `${schema}.api_keys`;
  return {
    insert: {
      name: statementName(schema, `api_key_insert`),
      text: `INSERT INTO ${t} (id, secret_sha256, role, tenant_id, name) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    },
    lookup: { name: statementName(schema, `api_key_lookup`), text: `SELECT ${COLUMNS}, secret_sha256 FROM ${t} WHERE id = $1` },
    list: {
      name: statementName(schema, `api_key_list`),
      text: `SELECT ${COLUMNS} FROM ${t} WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2 OR revoked_at IS NULL)
        ORDER BY created_at, id`,
    },
    revoke: {
      name: statementName(schema, `api_key_revoke`),
      text: `UPDATE ${t} SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING ${COLUMNS}`,
    },
    anyActive: {
      name: statementName(schema, `api_key_any_active`),
      text: `SELECT EXISTS (SELECT 1 FROM ${t} WHERE revoked_at IS NULL) AS any`,
    },
    touch: {
      name: statementName(schema, `api_key_touch`),
      text: `UPDATE ${t} SET last_used_at = now()
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    },
  } as const;
}
