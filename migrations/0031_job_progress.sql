-- Why: a handler reports how far it has got (ctx.progress), and the API and the console show it.
-- The latest value a holder of the job's lease stored: a number 0..100 or a small JSON object
-- (at most 2,048 bytes as JSON text, checked by the library), NULL until a handler stores one.
-- Nullable with no default, so adding it rewrites no row and a job that never reports pays
-- nothing. Kept across attempts (the next report replaces it); a replay clears it with the result.
ALTER TABLE jobs ADD COLUMN progress jsonb;
