// Operational routes: liveness, readiness, Prometheus metrics, the OpenAPI document
// and the admin console (its page and the static files it loads, console-files.ts).

import { Hono } from 'hono';
import type { Baton } from '../../index.ts';
import { CONSOLE_HEADERS, consoleFiles } from '../console-files.ts';
import type { AppEnv } from '../context.ts';
import { ApiError } from '../errors.ts';
import type { Metrics } from '../metrics.ts';
import type { JsonObject } from '../openapi.ts';
import { apiDocument } from '../openapi-routes.ts';
import { ANY, fails, GUARDED } from '../route-errors.ts';

/** A readiness probe must answer even when the pool is stuck waiting for a connection. */
export const READY_DB_TIMEOUT_MS = 2_000;

export interface OpsOptions {
  metrics?: Metrics;
  /** Extra readiness condition, e.g. "the engine has started". Default: always true. */
  isStarted?: () => boolean;
  /** The console's page; the files it loads are read from its folder. */
  consoleHtmlPath: string;
  /** Marks the console page so it shows its demo button (see AppOptions.demoHandlers). */
  demoHandlers: boolean;
  /** Whether the API requires a bearer token; the OpenAPI document says so. */
  bearer: boolean;
}

async function probeDb(baton: Baton): Promise<'ok' | 'unreachable'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('readiness probe timed out')), READY_DB_TIMEOUT_MS);
  });
  try {
    // Cheapest admin read; any answer proves the pool can reach the database.
    await Promise.race([baton.admin.workers(), timeout]);
    return 'ok';
  } catch {
    return 'unreachable';
  } finally {
    clearTimeout(timer);
  }
}

export function opsRoutes(baton: Baton, opts: OpsOptions) {
  const consoleApp = consoleFiles(opts.consoleHtmlPath, opts.demoHandlers);
  let document: JsonObject | undefined;
  return (
    new Hono<AppEnv>()
      .get('/healthz', fails(...ANY), (c) => c.json({ status: 'ok' as const }, 200))
      // Built on first request, then kept: it depends only on the code and `bearer`.
      .get('/openapi.json', fails('HOST_NOT_ALLOWED', ...ANY), (c) => {
        document ??= apiDocument({ bearer: opts.bearer });
        return c.json(document, 200);
      })
      .get('/readyz', fails('NOT_READY', ...ANY), async (c) => {
        const db = await probeDb(baton);
        const started = opts.isStarted?.() ?? true;
        if (db !== 'ok' || !started) {
          // Not started yet (probes poll while the daemon starts) or stopping is expected: only an unreachable database is news.
          if (db === 'ok') c.get('log').debug({ db, started }, 'not ready');
          else c.get('log').warn({ db, started }, 'not ready');
          throw new ApiError('NOT_READY', 'not ready', { db, started });
        }
        return c.json({ status: 'ready' as const, db, started }, 200);
      })
      .get('/metrics', fails('ROUTE_NOT_FOUND', ...GUARDED, 'ADMIN_REQUIRED'), async (c) => {
        if (!opts.metrics) throw new ApiError('ROUTE_NOT_FOUND', 'metrics are disabled');
        return c.body(await opts.metrics.render(), 200, { 'Content-Type': opts.metrics.contentType });
      })
      .get('/', fails('ROUTE_NOT_FOUND', 'HOST_NOT_ALLOWED', ...ANY), async (c) => {
        const page = await consoleApp.page();
        if (page === undefined) throw new ApiError('ROUTE_NOT_FOUND', 'the admin console is not installed');
        return c.html(page, 200, CONSOLE_HEADERS);
      })
      .get('/console/:file', fails('ROUTE_NOT_FOUND', 'HOST_NOT_ALLOWED', ...ANY), async (c) => {
        const file = await consoleApp.asset(c.req.param('file'));
        if (file === undefined) throw new ApiError('ROUTE_NOT_FOUND', 'no such console file');
        return c.body(file.body, 200, { ...CONSOLE_HEADERS, 'Content-Type': file.contentType });
      })
  );
}
