// Per-request id (X-Request-Id, echoed or generated) and a child logger bound to
// it; one log line per request with status and duration, and HTTP metrics.

import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Logger } from '../index.ts';
import type { AppEnv } from './context.ts';
import type { Metrics } from './metrics.ts';

/** A caller's id is kept only if it is short and plain, so it is safe to log and echo. */
const CLIENT_REQUEST_ID = /^[\w\-.=:]{1,128}$/;

export function requestContext(logger: Logger, metrics?: Metrics): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const given = c.req.header('x-request-id');
    const requestId = given && CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
    const log = logger.child({ reqId: requestId });
    c.set('requestId', requestId);
    c.set('log', log);
    const started = performance.now();
    await next();
    c.header('X-Request-Id', requestId);
    c.header('X-Content-Type-Options', 'nosniff');
    const seconds = (performance.now() - started) / 1000;
    const status = c.res.status;
    // The matched pattern, not the raw path, so ids do not explode metric cardinality.
    const route = status === 404 || status === 405 ? 'unmatched' : routePath(c, -1);
    metrics?.observeRequest(c.req.method, route, status, seconds);
    const line = { method: c.req.method, path: c.req.path, status, ms: Math.round(seconds * 1000) };
    // /readyz's 503 is its answer to a probe (starting, stopping), not a failure of the request;
    // an unreachable database is warned about by the route itself.
    if (status >= 500 && !(status === 503 && c.req.path === '/readyz')) log.error(line, 'request failed');
    else log.info(line, 'request');
  };
}
