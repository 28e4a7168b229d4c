// Composition of the library: turns options into an engine wired to
// node-postgres (pool, LISTEN connection, presence connection).

import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type pg from 'pg';
import type { Baton } from './core/baton.ts';
import type { Clock } from './core/clock.ts';
import { type EngineConfigInput, parseEngineConfig, QUERY_TIMEOUT_MS_DEFAULT } from './core/config.ts';
import { Engine } from './core/engine.ts';
import type { HandlerMap } from './core/handler.ts';
import { type Logger, noopLogger } from './core/logger.ts';
import { cronChannelFor } from './core/notifier.ts';
import { parseRelayConfig, type RelayConfigInput } from './core/outbox/config.ts';
import type { PublisherMap } from './core/outbox/publisher.ts';
import { type MigrateResult, migrate, pendingMigrations } from './db/migrate.ts';
import { leaseOnlyPresence } from './db/pg/lease-only-presence.ts';
import { PgListener } from './db/pg/listener.ts';
import { ConnectionStringError, isMultiHost, parseConnectionString } from './db/pg/multi-host.ts';
import { openPool, type PoolerMode } from './db/pg/open-pool.ts';
import { PgExecutor } from './db/pg/pg-executor.ts';
import { PgLeaderStore } from './db/pg/pg-leader.ts';
import { PgOutboxStore } from './db/pg/pg-outbox.ts';
import { PgScheduleStore } from './db/pg/pg-schedules.ts';
import { type PgPoolLike, warmPool } from './db/pg/pool.ts';
import { PgPresence } from './db/pg/presence.ts';
import { jobQueries } from './db/pg/queries/job.ts';
import { installTokenFloor } from './db/pg/token-floor.ts';
import { PgWorkflowStore } from './db/pg/workflow-store.ts';
import { quoteSchema } from './driver/schema-name.ts';
import { otelTracing } from './otel.ts';
import { BatonError } from './types/errors.ts';
import type { ScheduleInput } from './types/schedule.ts';
import { PACKAGE_VERSION } from './version.ts';

/** Options of createBaton: the connection, queues, handlers, schedules, logger and every engine setting (docs/configuration.md). */
export interface BatonOptions extends EngineConfigInput {
  /** A pg.Pool to use (Baton does not end it on stop). Either pool or connectionString is required. */
  pool?: PgPoolLike;
  /**
   * Used to build a pool (ended on stop) and the LISTEN / presence connections. Several hosts
   * as libpq lists them (postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write): every
   * session goes to a writable one, so a promoted standby is followed (docs/scaling.md).
   */
  connectionString?: string;
  /** Max connections of the pool Baton builds. Default 10. */
  poolSize?: number;
  /**
   * Max connections of the admin pool: listings, counts, getJob, replay, cancel and the worker
   * list run there, opened on first use, so no number of operator reads can take a connection
   * that claims, heartbeats and outcome writes need. Default 2.
   */
  adminPoolSize?: number;
  /**
   * 'transaction': `connectionString` goes through a transaction pooler (PgBouncer with
   * pool_mode = transaction), so Baton names no statement, sends no session setting and claims
   * with synchronous commits there. What needs a session of its own (LISTEN, the presence
   * lock, migrations) uses `directConnectionString`; without one the worker polls, and a
   * crashed worker's jobs come back when their leases expire (docs/scaling.md). Default 'none'.
   */
  pooler?: PoolerMode;
  /** A URL straight to the server, for LISTEN, the presence lock and migrations when `pooler` is 'transaction'. */
  directConnectionString?: string;
  /** Per-query timeout (ms) of the pool Baton builds, so a blackholed connection errors instead of hanging. Default 10 000. */
  queryTimeoutMs?: number;
  /**
   * Schedules to create or update by (tenantId, name) at start(). Schedules not in the list
   * are left alone unless pruneSchedules is true. Validated here: a bad one is INVALID_CONFIG.
   */
  schedules?: ScheduleInput[];
  /** Delete, at start(), every schedule not in `schedules`. Default false. */
  pruneSchedules?: boolean;
  /** Job type -> handler. */
  handlers?: HandlerMap;
  /** pino-compatible logger; silent by default. */
  logger?: Logger;
  /**
   * Local monotonic time, for what the worker measures itself (how long a lease has gone
   * unproven, how late a claim's answer came). Default: performance.now(). Tests pass one they
   * can move; database time (run_at, expiry, backoff) is never taken from it.
   */
  clock?: Clock;
  /**
   * Trace context capture at enqueue and a span per attempt through @opentelemetry/api (an
   * optional peer dependency). Default: on when that package is installed. `true` without it
   * is INVALID_CONFIG.
   */
  tracing?: boolean;
  /** The transactional outbox's relay: publishers by destination name, and its settings (docs/outbox.md). */
  outbox?: OutboxOptions;
}

/** The `outbox` option: publishers by destination name, whether this process relays, and the relay's settings. */
export interface OutboxOptions extends RelayConfigInput {
  /** Destination name -> publisher (webhookPublisher, rabbitmqPublisher, natsPublisher or your own). */
  publishers?: PublisherMap;
  /** Run a relay in this process when there are publishers. Default true. */
  relay?: boolean;
}

export const ADMIN_POOL_SIZE_DEFAULT = 2;

/** A pool opened on first use (most engines never run an admin read); none is opened after end(). */
function lazyPool(open: () => pg.Pool): PgPoolLike & { end(): Promise<void> } {
  let pool: pg.Pool | null = null;
  let ended = false;
  const get = () => {
    if (ended) throw new BatonError('SHUTTING_DOWN', 'this Baton instance was stopped');
    pool ??= open();
    return pool;
  };
  return {
    query: (config) => get().query(config as pg.QueryConfig) as never,
    connect: () => get().connect(),
    end: async () => {
      ended = true;
      await pool?.end();
    },
  };
}

/**
 * A connection string as a ClientConfig: a multi-host one (hosts h1:p1,h2:p2, target_session_attrs)
 * connects to a writable host only (multi-host.ts). INVALID_CONFIG naming `option` when it is bad.
 */
function connectionConfig(url: string, option: string): pg.ClientConfig {
  try {
    return parseConnectionString(url, option);
  } catch (err) {
    if (err instanceof ConnectionStringError) throw new BatonError('INVALID_CONFIG', `invalid Baton options: ${err.message}`);
    throw err;
  }
}

/** The engine settings a transaction pooler imposes; INVALID_CONFIG for an option it cannot serve. */
function poolerSettings(
  pooler: PoolerMode,
  o: {
    givenPool: PgPoolLike | undefined;
    connectionString: string | undefined;
    directConnectionString: string | undefined;
    engineInput: EngineConfigInput;
  },
): EngineConfigInput {
  const bad = (why: string) => new BatonError('INVALID_CONFIG', `invalid Baton options: ${why}`);
  if (pooler !== 'none' && pooler !== 'transaction') throw bad(`pooler must be 'none' or 'transaction', not ${JSON.stringify(pooler)}`);
  if (pooler === 'none') {
    if (o.directConnectionString !== undefined) throw bad("directConnectionString is used only with pooler: 'transaction'");
    return {};
  }
  if (o.givenPool) throw bad("pooler: 'transaction' needs connectionString, not pool (Baton opens its pools to name no statement)");
  if (o.connectionString !== undefined && isMultiHost(connectionConfig(o.connectionString, 'connectionString'))) {
    throw bad(
      "pooler: 'transaction': the pooler's connectionString names one host (list the servers in the pooler; directConnectionString may name several)",
    );
  }
  if (o.directConnectionString === '') throw bad('directConnectionString must be a URL, not empty');
  // Asynchronous claims rely on a mark on the session (token-floor.ts), which a pooler does not keep.
  if (o.engineInput.asyncClaims === true) throw bad("asyncClaims needs sessions of its own: not with pooler: 'transaction'");
  if (o.directConnectionString === undefined && o.engineInput.dispatch === 'notify') {
    throw bad("dispatch: 'notify' needs LISTEN, which a transaction pooler cannot carry: set directConnectionString");
  }
  return { asyncClaims: false, ...(o.directConnectionString === undefined && { dispatch: 'poll' as const }) };
}

/**
 * Migrations hold a session lock across statements: through a transaction pooler they take the
 * direct URL. Without one, a schema already up to date is fine (nothing to apply); one with
 * migrations pending is refused.
 */
async function migrateDirect(direct: pg.ClientConfig | null, pooled: PgPoolLike, schema: string): Promise<MigrateResult> {
  if (!direct) {
    const pending = await pendingMigrations(pooled, { schema });
    if (pending.length === 0) return { applied: [] };
    throw new BatonError(
      'INVALID_CONFIG',
      `${pending.length} migration(s) pending (${pending[0]} first), and migrations hold a session lock, which a transaction pooler cannot keep: set directConnectionString, or run them against the server itself (baton migrate)`,
    );
  }
  const pool = openPool({ ...direct, max: 1, connectionTimeoutMillis: 5_000 });
  try {
    return await migrate(pool, { schema });
  } finally {
    await pool.end();
  }
}

/** The advisory-lock namespace of a schema's presence locks: a stable positive int4. */
export function lockNamespaceFor(schema: string): number {
  let h = 0x811c9dc5;
  for (const ch of `baton.presence:${schema}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
  return h >>> 1 || 1;
}

/**
 * Creates an engine. Nothing connects until migrate(), start() or a first query.
 * @throws BatonError INVALID_CONFIG naming every bad option.
 */
export function createBaton(options: BatonOptions): Baton {
  const {
    pool: givenPool,
    connectionString,
    poolSize,
    adminPoolSize,
    pooler = 'none',
    directConnectionString,
    queryTimeoutMs,
    handlers,
    logger,
    clock,
    tracing,
    schedules,
    pruneSchedules,
    outbox,
    ...engineInput
  } = options ?? {};
  if (!givenPool && !connectionString) {
    throw new BatonError('INVALID_CONFIG', 'invalid Baton options: pool or connectionString is required');
  }
  const throughPooler = poolerSettings(pooler, { givenPool, connectionString, directConnectionString, engineInput });
  if (pooler === 'transaction' && directConnectionString === undefined) {
    (logger ?? noopLogger).warn(
      {},
      "baton: through a transaction pooler with no directConnectionString: polling only (no LISTEN), no presence lock (a crashed worker's jobs come back when their leases expire), pending migrations refused",
    );
  }
  const config = parseEngineConfig(
    { ...engineInput, ...throughPooler },
    () => `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
  );
  const { publishers: outboxPublishers, relay: outboxRelay, ...relayInput } = outbox ?? {};
  const relayConfig = parseRelayConfig(relayInput);
  const otel = tracing === false ? null : otelTracing(PACKAGE_VERSION);
  if (tracing === true && !otel) {
    throw new BatonError(
      'INVALID_CONFIG',
      'invalid Baton options: tracing: true needs @opentelemetry/api installed (npm install @opentelemetry/api)',
    );
  }
  const timeout = queryTimeoutMs ?? QUERY_TIMEOUT_MS_DEFAULT;
  const connection: pg.ClientConfig = connectionString
    ? connectionConfig(connectionString, 'connectionString')
    : { ...((givenPool as unknown as { options?: pg.ClientConfig }).options ?? {}) };
  // TCP keepalive plus client- and server-side timeouts: a silently dropped connection
  // fails within seconds instead of the kernel's retransmission limit (many minutes).
  const hardened: pg.PoolConfig = {
    ...connection,
    max: poolSize ?? 10,
    keepAlive: true,
    keepAliveInitialDelayMillis: 2_000,
    connectionTimeoutMillis: 5_000,
    query_timeout: timeout,
    application_name: 'baton',
    // Session settings sent at connect: a transaction pooler refuses them (set them on the role).
    ...(pooler === 'none' && { statement_timeout: timeout, idle_in_transaction_session_timeout: 30_000 }),
    // Queries written back to back on one client go out without waiting for each reply
    // (each still its own implicit transaction); a pooler gets them one at a time.
    pipeline: pooler === 'none',
  };
  // Baton's own sessions run without JIT (see open-pool.ts); a caller's pool keeps its settings.
  const ownPool = givenPool ? null : openPool(hardened, pooler);
  // A caller's pool-like object whose settings we cannot read: admin work shares it.
  const canOpen = connectionString !== undefined || (givenPool as { options?: unknown } | undefined)?.options !== undefined;
  const adminPool = canOpen
    ? lazyPool(() => openPool({ ...hardened, max: adminPoolSize ?? ADMIN_POOL_SIZE_DEFAULT, application_name: 'baton-admin' }, pooler))
    : null;
  const schema = quoteSchema(config.schema);
  // Behind a transaction pooler, a caller's client (its own transaction) gets no named statement either.
  const unnamed = pooler === 'transaction';
  if (ownPool && config.asyncClaims) installTokenFloor(ownPool, jobQueries(schema).tokenFloor);
  const pool = (givenPool ?? ownPool) as PgPoolLike;
  const lockNamespace = lockNamespaceFor(config.schema);
  const log = logger ?? noopLogger;
  // The presence and LISTEN connections: bounded like the pool's, so a start() on a path that
  // goes silent after the connect fails instead of waiting for TCP to give up.
  const direct =
    pooler === 'transaction'
      ? directConnectionString
        ? connectionConfig(directConnectionString, 'directConnectionString')
        : null
      : connection;
  const sideConnection: pg.ClientConfig = {
    ...direct,
    connectionTimeoutMillis: 5_000,
    query_timeout: timeout,
    keepAlive: true,
    keepAliveInitialDelayMillis: 2_000,
  };

  return new Engine({
    config,
    executor: new PgExecutor(pool, schema, { unnamed }),
    adminExecutor: new PgExecutor(adminPool ?? pool, schema, { unnamed }),
    leaderStore: new PgLeaderStore(pool, schema),
    scheduleStore: new PgScheduleStore(pool, schema, cronChannelFor(config.schema)),
    adminScheduleStore: new PgScheduleStore(adminPool ?? pool, schema, cronChannelFor(config.schema)),
    schedules: { declared: schedules ?? [], pruneUndeclared: pruneSchedules ?? false },
    workflowStore: new PgWorkflowStore(pool, schema),
    outbox: {
      store: new PgOutboxStore(pool, schema, { unnamed }),
      adminStore: new PgOutboxStore(adminPool ?? pool, schema, { unnamed }),
      config: relayConfig,
      publishers: outboxPublishers ?? {},
      relay: outboxRelay ?? true,
    },
    handlers: handlers ?? {},
    logger: log,
    lockNamespace,
    migrate: () => (pooler === 'none' ? migrate(pool, { schema: config.schema }) : migrateDirect(direct, pool, config.schema)),
    warmPool: (connections) => warmPool(pool, connections),
    createPresence: (hooks) =>
      direct === null
        ? leaseOnlyPresence(hooks)
        : new PgPresence({
            ...hooks,
            connection: sideConnection,
            quotedSchema: schema,
            lockNamespace,
            workerId: config.workerId,
            queues: { ...config.queues },
            jobTypes: hooks.jobTypes,
            onError: (err) => log.warn({ err }, 'baton: presence connection lost; reconnecting'),
          }),
    createListener: (hooks) => new PgListener({ connection: sideConnection, ...hooks }),
    close: async () => {
      await Promise.all([ownPool?.end(), adminPool?.end()]);
    },
    ...(clock ? { clock } : {}),
    ...(otel ? { tracing: otel } : {}),
  });
}
