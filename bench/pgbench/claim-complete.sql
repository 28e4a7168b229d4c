-- pgbench script: one engine "round" per transaction: claim :batch pending jobs into
-- running (the engine's job_claim statement), then complete exactly those, each fenced by
-- its own token (job_complete_many). bench/pgbench.ts fills the placeholders from
-- src/db/pg/queries/job.ts so the statements are the engine's own.
WITH claimed AS ({{CLAIM}}) SELECT array_agg(id) AS ids, array_agg(lease_token) AS toks FROM claimed
\gset
{{COMPLETE}};
