// What a migration run reports (db/migrate.ts runs them).

export interface MigrateResult {
  /** File names applied by this call, in order (empty when already up to date). */
  applied: string[];
}
