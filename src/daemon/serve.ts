// `baton serve`: the composition root. Database (URL or embedded) -> migrate -> HTTP
// bound on HOST:PORT -> workers started. The port is bound before any worker starts, so
// a taken port stops start-up with nothing claimed and nothing to drain. Every resource
// registers its own shutdown step as it comes up, so a signal or a start-up failure at any
// point unwinds exactly what exists, in SHUTDOWN_ORDER (stop accepting HTTP, drain jobs,
// close HTTP, stop the database), and the shutdown says only those steps.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger as PinoLogger } from 'pino';
import type { HandlerMap } from '../core/handler.ts';
import { openApiKeys } from '../create-api-keys.ts';
import { createApp } from '../http/app.ts';
import { createStatsHistory } from '../http/stats-history.ts';
import { isBatonError } from '../types/errors.ts';
import type { WorkflowFn } from '../types/workflow.ts';
import { watchAuthMode } from './auth-mode.ts';
import { openDatabase, openEngine } from './database.ts';
import { demoHandlers, demoWorkflows } from './demo-handlers.ts';
import { ConfigError, type DaemonConfig } from './env.ts';
import { createHttpServer } from './http-server.ts';
import { loadHandlers } from './load-handlers.ts';
import { isLoopbackHost, openBindMessage } from './loopback.ts';
import { buildPublishers } from './outbox-config.ts';
import { PlainError } from './plain-error.ts';
import { EXIT_CONFIG, EXIT_FAILED, installShutdown, SHUTDOWN_ORDER, type Shutdown } from './shutdown.ts';

/** Slack on top of drainMs before the watchdog forces exit (closing HTTP, stopping PostgreSQL). */
const SHUTDOWN_SLACK_MS = 20_000;

export async function serve(config: DaemonConfig, logger: PinoLogger): Promise<Shutdown> {
  let embeddedKill: (() => void) | undefined;
  const shutdown = installShutdown({
    logger,
    forceAfterMs: config.drainMs + SHUTDOWN_SLACK_MS,
    onForce: () => embeddedKill?.(),
  });
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception');
    shutdown.trigger('uncaughtException', EXIT_FAILED);
  });
  process.on('unhandledRejection', (err) => {
    logger.fatal({ err }, 'unhandled rejection');
    shutdown.trigger('unhandledRejection', EXIT_FAILED);
  });
  // Whatever happens, never leave an embedded postmaster behind us.
  process.on('exit', () => embeddedKill?.());

  try {
    // Handlers first: a broken handler module must fail before anything is started.
    const handlers = await resolveHandlers(config, logger);
    const db = await openDatabase(config, logger);
    embeddedKill = db.embedded?.killNow;
    if (db.embedded?.owned) shutdown.add({ order: SHUTDOWN_ORDER.database, name: 'stop the embedded PostgreSQL', run: () => db.close() });

    const baton = openEngine(config, db, {
      ...config.engine,
      poolSize: config.poolSize,
      handlers,
      logger: logger.child({ component: 'engine' }),
      outbox: { publishers: buildPublishers(config.outbox.publishers), relay: config.outbox.relay },
    });
    if (config.demoHandlers) {
      for (const [name, fn] of Object.entries(demoWorkflows)) {
        try {
          baton.workflow(name, fn as WorkflowFn);
        } catch (err) {
          // Over BATON_CLUSTERS a workflow's queue must be the home cluster's: a demo is left out rather than stop start-up.
          if (!isBatonError(err) || err.code !== 'INVALID_CONFIG') throw err;
          logger.warn({ workflow: name, reason: err.message }, 'demo workflow not defined');
        }
      }
    }
    // Named for what it does: before the workers start there is nothing to drain.
    const engineStep = { order: SHUTDOWN_ORDER.drain, name: 'close the engine', run: () => baton.stop({ drainMs: config.drainMs }) };
    shutdown.add(engineStep);
    const migrated = await baton.migrate();
    if (migrated.applied.length > 0) logger.info({ applied: migrated.applied }, 'migrations applied');

    // The loopback rule, before any worker starts: open (no token, no key) only where only this machine reaches.
    const apiKeys = openApiKeys({ connectionString: db.connectionString, pooler: config.pooler, schema: config.schema });
    shutdown.add({ order: SHUTDOWN_ORDER.database - 1, name: 'close the key store', run: () => apiKeys.close() });
    const loopback = isLoopbackHost(config.host);
    const credentials = config.apiToken !== undefined || (await apiKeys.anyActive());
    if (!credentials && !loopback) throw new ConfigError(openBindMessage(config.host), 'HOST');
    if (!credentials) {
      logger.warn(
        { host: config.host, auth: 'open' },
        'NO AUTHENTICATION: no BATON_API_TOKEN and no API key, so the API is open to anyone on this machine. ' +
          'It stays on the loopback address; create a key (baton keys create --role admin) to close it.',
      );
    }
    let started = false;
    let serving = true;
    let listening: { host: string; port: number } | undefined;
    const statsHistory = createStatsHistory(baton);
    let authWatch: { stop(): void } | undefined;
    const app = createApp(baton, {
      statsHistory,
      apiToken: config.apiToken,
      apiKeys,
      // Off loopback the API is never open, even if every key is revoked later.
      requireAuth: !loopback,
      allowedHosts: config.allowedHosts,
      // The Host check answers the bind host and loopback names on the port the server got.
      listenOn: () => listening,
      bodyLimitBytes: config.bodyLimitBytes,
      demoHandlers: config.demoHandlers,
      logger: logger.child({ component: 'http' }),
      // /readyz: 503 until the workers run, and as soon as a shutdown begins, so a load balancer stops routing here.
      isStarted: () => started && serving,
    });
    const server = createHttpServer(
      app.fetch,
      config.http,
      refusalLog(logger.child({ component: 'http' }), config.http.maxConnectionsPerAddress),
    );
    // Bound before any worker starts: a port in use stops start-up here, with no job claimed.
    const address = await listen(server, config.port, config.host);
    listening = { host: config.host, port: address.port };
    const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
    shutdown.add({
      order: SHUTDOWN_ORDER.stopAccepting,
      name: 'stop accepting HTTP',
      run: async () => {
        serving = false;
        server.close();
        server.closeIdleConnections();
        statsHistory.close();
        authWatch?.stop();
      },
    });
    shutdown.add({
      order: SHUTDOWN_ORDER.closeHttp,
      name: 'close HTTP',
      run: async () => {
        server.closeAllConnections();
        await closed;
      },
    });

    await baton.start();
    started = true;
    engineStep.name = 'drain in-flight jobs';
    logger.info({ queues: baton.config.queues, workerId: baton.config.workerId }, 'workers started');
    const destinations = Object.keys(config.outbox.publishers);
    if (destinations.length > 0) logger.info({ destinations, relay: config.outbox.relay }, 'outbox publishers configured');
    // Open (no token, on loopback): the first key created closes the API under running clients, the last revoked opens it again. Say so.
    if (config.apiToken === undefined && loopback) {
      authWatch = watchAuthMode({
        apiKeys,
        open: !credentials,
        onChange: (open) => {
          if (open)
            logger.warn({ auth: 'open' }, 'no API key is active any more: the API is open again to anyone on this machine (loopback only)');
          else
            logger.warn(
              { auth: 'bearer' },
              'an API key exists now: the API requires a credential (Authorization: Bearer <API key>); the console asks for one',
            );
        },
      });
    }
    const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}/`;
    logger.info(
      { url, port: address.port, host: address.address, auth: credentials ? 'bearer' : 'open (loopback only)' },
      `Baton is listening on ${url} (console at /)`,
    );
  } catch (err) {
    if (err instanceof ConfigError) {
      logger.fatal({ setting: err.setting }, err.message);
      shutdown.trigger('configuration error', EXIT_CONFIG);
    } else if (err instanceof PlainError) {
      logger.fatal({}, err.message);
      shutdown.trigger('start-up failed', EXIT_FAILED);
    } else {
      logger.fatal({ err }, 'start-up failed');
      shutdown.trigger('start-up failed', EXIT_FAILED);
    }
  }
  return shutdown;
}

/** Demo handlers (unless disabled) overlaid by the user's module: a user handler wins on a name clash. */
async function resolveHandlers(config: DaemonConfig, logger: PinoLogger): Promise<HandlerMap> {
  const demo = config.demoHandlers ? demoHandlers : {};
  const user = config.handlersPath ? await loadHandlers(config.handlersPath) : {};
  const clash = Object.keys(user).filter((k) => k in demo);
  if (clash.length > 0) logger.warn({ jobTypes: clash }, 'user handlers replace demo handlers of the same name');
  const all = { ...demo, ...user };
  logger.info({ jobTypes: Object.keys(all), module: config.handlersPath ?? null }, 'handlers registered');
  return all;
}

/** Refused connections, logged at most every REFUSAL_LOG_EVERY_MS with how many there were (a flood logs little). */
const REFUSAL_LOG_EVERY_MS = 10_000;
function refusalLog(log: PinoLogger, max: number): (address: string) => void {
  let last = 0;
  let refused = 0;
  return (address) => {
    refused++;
    const now = Date.now();
    if (now - last < REFUSAL_LOG_EVERY_MS) return;
    log.warn(
      { address, refused, max },
      'connections refused with 429: a client address held the most it may (BATON_MAX_CONNECTIONS_PER_IP)',
    );
    last = now;
    refused = 0;
  };
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(new PlainError(`cannot listen on ${host}:${port}: ${err.code ?? err.message} (set PORT / HOST)`, { cause: err }));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}
