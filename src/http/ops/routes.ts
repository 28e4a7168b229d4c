// Operational routes, each declared once (route-spec.ts): liveness, readiness, Prometheus
// metrics, the OpenAPI document and the admin console (its page and the files it loads,
// console-files.ts). Open but for /metrics; /healthz and /readyz answer whatever the Host.

import { z } from 'zod';
import type { Baton } from '../../index.ts';
import { ApiError } from '../errors.ts';
import type { Metrics } from '../metrics.ts';
import type { JsonObject } from '../openapi.ts';
import { ANY, GUARDED } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import { responseSchemas as r } from '../wire-schemas.ts';
import { CONSOLE_ASSETS, CONSOLE_HEADERS, consoleFiles } from './console-files.ts';

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
  /** The OpenAPI document (openapi-routes.ts, which lists these routes too), built on first request. */
  document: () => JsonObject;
}

const health = defineRoute({
  method: 'get',
  path: '/healthz',
  operationId: 'health',
  tag: 'operations',
  summary: 'Liveness: the process is up',
  description: 'Open, and answers whatever the Host.',
  responses: { 200: json('up', r.health) },
  errors: ANY,
});

const ready = defineRoute({
  method: 'get',
  path: '/readyz',
  operationId: 'ready',
  tag: 'operations',
  summary: 'Readiness: the database answers within 2 s and the engine has started',
  description: 'Open, and answers whatever the Host. 503 NOT_READY carries `details: { db, started }`.',
  responses: { 200: json('ready', r.ready) },
  errors: ['NOT_READY', ...ANY],
});

const metrics = defineRoute({
  method: 'get',
  path: '/metrics',
  operationId: 'metrics',
  tag: 'operations',
  summary: 'Prometheus metrics',
  description: '404 when the server runs without metrics.',
  responses: { 200: { description: 'Prometheus text format', schema: r.text, contentType: 'text/plain' } },
  errors: ['ROUTE_NOT_FOUND', ...GUARDED, 'ADMIN_REQUIRED'],
});

const openapi = defineRoute({
  method: 'get',
  path: '/openapi.json',
  operationId: 'openapi',
  tag: 'operations',
  summary: 'This document',
  description: 'Open like the console page: it describes the API and holds no data.',
  responses: { 200: json('the OpenAPI 3.1 document', r.openapi) },
  errors: ['HOST_NOT_ALLOWED', ...ANY],
});

const consolePage = defineRoute({
  method: 'get',
  path: '/',
  operationId: 'console',
  tag: 'operations',
  summary: 'The admin console page',
  description: 'Open: the page holds no data and sends the token on its API calls. 404 when the page is not installed.',
  responses: {
    200: { description: 'the HTML page; it loads its stylesheet and scripts from /console/', schema: r.text, contentType: 'text/html' },
  },
  errors: ['ROUTE_NOT_FOUND', 'HOST_NOT_ALLOWED', ...ANY],
});

const consoleFile = defineRoute({
  method: 'get',
  path: '/console/:file',
  operationId: 'consoleFile',
  tag: 'operations',
  summary: 'A stylesheet or ES module of the admin console',
  description: 'Open like the console page. Only the files the page loads are served; any other name is 404.',
  // Not validated: a name the page does not load is 404 ROUTE_NOT_FOUND, as any unknown path.
  lenient: { params: z.object({ file: z.enum([...CONSOLE_ASSETS.keys()]) }) },
  responses: { 200: { description: 'the file', schema: r.text, contentType: ['text/javascript', 'text/css'] } },
  errors: ['ROUTE_NOT_FOUND', 'HOST_NOT_ALLOWED', ...ANY],
});

/** The resource as the OpenAPI document lists it. */
export const OPS_API = {
  tag: { name: 'operations', description: 'health, readiness, metrics, this document, the console' },
  routes: [health, ready, metrics, openapi, consolePage, consoleFile],
} satisfies ResourceApi;

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
    routes()
      .add(health, (c) => c.json({ status: 'ok' as const }, 200))
      // Built on first request, then kept: it depends only on the code and the app's options.
      .add(openapi, (c) => {
        document ??= opts.document();
        return c.json(document, 200);
      })
      .add(ready, async (c) => {
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
      .add(metrics, async (c) => {
        if (!opts.metrics) throw new ApiError('ROUTE_NOT_FOUND', 'metrics are disabled');
        return c.body(await opts.metrics.render(), 200, { 'Content-Type': opts.metrics.contentType });
      })
      .add(consolePage, async (c) => {
        const page = await consoleApp.page();
        if (page === undefined) throw new ApiError('ROUTE_NOT_FOUND', 'the admin console is not installed');
        return c.html(page, 200, CONSOLE_HEADERS);
      })
      .add(consoleFile, async (c) => {
        const file = await consoleApp.asset(c.req.param('file'));
        if (file === undefined) throw new ApiError('ROUTE_NOT_FOUND', 'no such console file');
        return c.body(file.body, 200, { ...CONSOLE_HEADERS, 'Content-Type': file.contentType });
      }).app
  );
}
