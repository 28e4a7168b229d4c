-- pgbench script: one engine "round" per transaction: claim :batch pending jobs into
-- running (the engine's job_claim statement, its UPDATE turned into a CTE whose ids and
-- tokens are aggregated into pgbench variables), then complete exactly those, each fenced by
-- its own token (job_complete_many). bench/pgbench.ts fills the placeholders from
-- src/db/pg/queries/job.ts so the statements are the engine's own.
{{CLAIM}}
\gset
{{COMPLETE}};
