// Per-request context shared by every route: the request id and a child logger
// bound to it. The logger is pino-compatible and silent unless one is given.

import type { Logger } from '../index.ts';
import type { Principal } from './tenant-scope.ts';

export interface AppEnv {
  Variables: {
    requestId: string;
    log: Logger;
    /** Set by auth.ts on TOKEN_GUARDED_PATHS; read through scopeOf (tenant-scope.ts). */
    principal: Principal;
  };
}

const noop = (): void => undefined;

/** A logger that drops everything; the default when the host passes none. */
export const silentLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
};
