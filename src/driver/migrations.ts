// What a migration run reports (db/migrate.ts runs them).

/** What a migration run answers: the files it applied. */
export interface MigrateResult {
  /** File names applied by this call, in order (empty when already up to date). */
  applied: string[];
}
