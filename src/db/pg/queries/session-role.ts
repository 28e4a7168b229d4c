// What a session is connected to, for servers older than PostgreSQL 14 that do not report
// in_hot_standby at start-up (multi-host.ts picks a writable host by it).

/** Whether the server is in recovery (a standby) and whether the session is read-only. */
export const SESSION_ROLE_SQL = `SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') = 'on' AS read_only`;
