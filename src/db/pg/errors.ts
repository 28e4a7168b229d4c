// Translates PostgreSQL SQLSTATEs into BatonError codes, in one place.

import { isInvalidInputSqlstate } from '../../driver/sqlstate.ts';
import { BatonError, isBatonError } from '../../types/errors.ts';

/** SQLSTATEs worth retrying: serialization failure, deadlock, cannot connect now, admin shutdown, crash shutdown. */
export const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set(['40001', '40P01', '57P01', '57P02', '57P03']);

/** Network-level failures of node-postgres: the database is unreachable, not the input bad. */
function isConnectionError(err: { code?: unknown; message?: unknown }): boolean {
  const code = typeof err.code === 'string' ? err.code : '';
  // NO_PRIMARY: no host of a multi-host URL was writable (multi-host.ts), as during a failover.
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'NO_PRIMARY'].includes(code)) return true;
  if (code.startsWith('08') || code.startsWith('57P')) return true;
  const msg = typeof err.message === 'string' ? err.message : '';
  // 'timeout expired': a pg.Client's own connectionTimeoutMillis (the pool's says 'timeout exceeded ...').
  return /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Query read timeout|Client has encountered a connection error/i.test(
    msg,
  );
}

/** Wraps any error from the driver into a BatonError with a stable code. */
export function translatePgError(err: unknown): BatonError {
  if (isBatonError(err)) return err;
  const e = (err ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && isInvalidInputSqlstate(code)) {
    return new BatonError('INVALID_ARGUMENT', `invalid input: ${String(e.message)}`, { cause: err, details: { sqlstate: code } });
  }
  if (isConnectionError(e)) {
    return new BatonError('DB_UNAVAILABLE', `database unavailable: ${String(e.message)}`, { cause: err });
  }
  return new BatonError('INTERNAL', `database error: ${String(e.message ?? err)}`, {
    cause: err,
    details: code ? { sqlstate: code } : undefined,
  });
}
