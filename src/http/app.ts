// The HTTP edge: one chained Hono app over a Baton engine (docs/http-api.md). Order of
// middleware: request id + log -> Host check (not on health checks) -> 405 detection
// -> authentication, setting the principal (not on health checks or the console page) ->
// admin-only paths -> same-origin, JSON-typed writes -> body limit -> routes, which scope
// every tenant through tenant-scope.ts. `AppType` feeds the typed client.

import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { ApiKeys, Baton, Logger } from '../index.ts';
import { hostCheck, type ListenAddress } from './allowed-hosts.ts';
import { authenticate, TOKEN_GUARDED_PATHS } from './auth.ts';
import { type AppEnv, silentLogger } from './context.ts';
import { cronRoutes } from './cron/routes.ts';
import { ApiError, errorResponse, handleError, handleNotFound } from './errors.ts';
import { flowRoutes } from './flow-control/routes.ts';
import { jobRoutes } from './jobs/routes.ts';
import { MAX_JSON_DEPTH_DEFAULT } from './json-body.ts';
import { keyRoutes } from './keys/routes.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { apiDocument } from './openapi-routes.ts';
import { opsRoutes } from './ops/routes.ts';
import { outboxRoutes } from './outbox/routes.ts';
import { queueRoutes } from './queues/routes.ts';
import { requestContext } from './request-context.ts';
import { sameOriginWrites } from './same-origin.ts';
import { createStatsHistory, type StatsHistory } from './stats-history.ts';
import { ADMIN_ONLY_PATHS, adminOnly } from './tenant-scope.ts';
import { workflowRoutes } from './workflows/routes.ts';

export const BODY_LIMIT_BYTES_DEFAULT = 1024 * 1024;
export const CONSOLE_HTML_PATH_DEFAULT = fileURLToPath(new URL('./console/index.html', import.meta.url));

export interface AppOptions {
  /**
   * When set, every /api/* route and /metrics require `Authorization: Bearer <apiToken>`
   * (401 UNAUTHORIZED otherwise). /healthz, /readyz, /openapi.json and the console's page and
   * files stay open: they hold no data, and a browser cannot attach a header to a navigation.
   */
  apiToken?: string;
  /**
   * API keys bound to tenants (docs/security.md): a tenant key sees and acts on its tenant's
   * jobs, runs and schedules only; an admin key on everything. While no key is active and no
   * apiToken is set, the API is open (unless requireAuth). Also serves /api/keys.
   */
  apiKeys?: ApiKeys;
  /** Refuse requests without a credential even while no key exists (a server on a non-loopback address). */
  requireAuth?: boolean;
  /** Largest request body in bytes; larger ones get 413 before being read in full. Default 1 MiB. */
  bodyLimitBytes?: number;
  /** Deepest JSON nesting accepted in a body. Default 64. */
  maxJsonDepth?: number;
  /** pino-compatible logger; a child with the request id is made per request. Silent by default. */
  logger?: Logger;
  /** Metrics to expose at /metrics; created from `baton` when absent; `false` disables them. */
  metrics?: Metrics | false;
  /**
   * The console's chart history (GET /api/stats/history); created from `baton` when absent. It
   * samples only while someone reads the stats; close() it when the server stops.
   */
  statsHistory?: StatsHistory;
  /** Readiness beyond database reachability, e.g. `() => engineStarted`. Default: always true. */
  isStarted?: () => boolean;
  /**
   * The admin console's page; the stylesheet and scripts it loads (GET /console/<name>) are read
   * from the same folder. Default: console/index.html next to this file (src/http, dist/http).
   */
  consoleHtmlPath?: string;
  /**
   * Whether the console offers its "Enqueue demo jobs" button: true when this process runs the
   * demo handlers (noop, sleep, boom, poison). Default false.
   */
  demoHandlers?: boolean;
  /**
   * Extra names the server answers to besides those it knows (see listenOn): `name` (any port)
   * or `name:port`, compared case-insensitively. `'*'` turns the Host check off. Any other Host
   * gets 421 HOST_NOT_ALLOWED, except on /healthz and /readyz. Default: none.
   */
  allowedHosts?: readonly string[] | '*';
  /**
   * Where the server listens, read per request (a port picked at listen time is seen). The
   * bind host and loopback names on that port are accepted; with a wildcard bind (0.0.0.0,
   * ::), any IP literal on it. While it returns undefined, or when absent, loopback names and
   * IP literals on any port are.
   */
  listenOn?: () => ListenAddress | undefined;
}

/** Builds the app; throws a plain Error only for invalid options (a programmer error). */
export function createApp(baton: Baton, opts: AppOptions = {}) {
  const maxSize = opts.bodyLimitBytes ?? BODY_LIMIT_BYTES_DEFAULT;
  if (!Number.isInteger(maxSize) || maxSize < 1) throw new Error('createApp: bodyLimitBytes must be a positive integer');
  const metrics = opts.metrics === false ? undefined : (opts.metrics ?? createMetrics(baton));
  const statsHistory = opts.statsHistory ?? createStatsHistory(baton);

  const base = new Hono<AppEnv>();
  base.onError(handleError);
  base.notFound(handleNotFound);
  base.use(requestContext(opts.logger ?? silentLogger, metrics));
  if (opts.allowedHosts !== '*') base.use(hostCheck(opts.allowedHosts ?? [], opts.listenOn ?? (() => undefined)));
  base.use(
    methodNotAllowed({
      app: base,
      onMethodNotAllowed: (c, methods) => {
        const res = errorResponse(c, 'METHOD_NOT_ALLOWED', `${c.req.method} is not allowed here; use ${methods.join(', ')}`);
        res.headers.set('Allow', methods.join(', '));
        return res;
      },
    }),
  );
  const guard = authenticate({
    apiToken: opts.apiToken,
    apiKeys: opts.apiKeys,
    requireAuth: opts.requireAuth,
    ...(metrics ? { onFailure: (reason) => metrics.observeAuthFailure(reason) } : {}),
  });
  for (const path of TOKEN_GUARDED_PATHS) base.use(path, guard);
  for (const path of ADMIN_ONLY_PATHS) base.use(path, adminOnly());
  base.use('/api/*', sameOriginWrites());
  base.use(
    '/api/*',
    bodyLimit({
      maxSize,
      onError: () => {
        throw new ApiError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxSize} bytes`, { limitBytes: maxSize });
      },
    }),
  );

  return base
    .route('/', jobRoutes(baton, opts.maxJsonDepth ?? MAX_JSON_DEPTH_DEFAULT))
    .route('/', queueRoutes(baton, statsHistory))
    .route('/', cronRoutes(baton, opts.maxJsonDepth ?? MAX_JSON_DEPTH_DEFAULT))
    .route('/', workflowRoutes(baton, opts.maxJsonDepth ?? MAX_JSON_DEPTH_DEFAULT))
    .route('/', keyRoutes(opts.apiKeys, opts.maxJsonDepth ?? MAX_JSON_DEPTH_DEFAULT))
    .route('/', flowRoutes(baton, opts.maxJsonDepth ?? MAX_JSON_DEPTH_DEFAULT))
    .route('/', outboxRoutes(baton))
    .route(
      '/',
      opsRoutes(baton, {
        ...(metrics ? { metrics } : {}),
        ...(opts.isStarted ? { isStarted: opts.isStarted } : {}),
        consoleHtmlPath: opts.consoleHtmlPath ?? CONSOLE_HTML_PATH_DEFAULT,
        demoHandlers: opts.demoHandlers ?? false,
        document: () => apiDocument({ bearer: opts.apiToken !== undefined || opts.apiKeys !== undefined || opts.requireAuth === true }),
      }),
    );
}

/** The app's type: the typed client (src/client) derives every route and body from it. */
export type AppType = ReturnType<typeof createApp>;
