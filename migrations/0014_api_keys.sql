-- Why: API keys bound to tenants (docs/security.md). A key is a public id (looked up here, shown
-- in listings and logs) and a secret of 256 random bits that is never stored: only its SHA-256.
-- A slow password hash buys nothing for a secret that cannot be guessed, and every cache miss
-- of the HTTP layer pays for the hash. Revocation keeps the row (revoked_at), so a listing
-- still shows who had access, and a revoked id is never handed out again.
-- role 'tenant' is bound to tenant_id; role 'admin' sees every tenant and has none.
CREATE TABLE api_keys (
  id            text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  secret_sha256 bytea NOT NULL CHECK (length(secret_sha256) = 32),
  role          text NOT NULL CHECK (role IN ('tenant', 'admin')),
  tenant_id     text,
  name          text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz,
  CONSTRAINT api_keys_role_tenant CHECK ((role = 'tenant') = (tenant_id IS NOT NULL))
);
