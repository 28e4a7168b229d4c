// The daemon's configuration: the settings of settings.ts read from an environment (main.ts
// reads process.env once), each overlaid by its CLI flag (flags win), into one frozen
// DaemonConfig. A bad value is a ConfigError naming the setting, never a silent fallback to a default.

import path from 'node:path';
import { z } from 'zod';
import { type EngineConfigInput, engineConfigSchema } from '../core/config.ts';
import { type PublisherSpecs, parsePublisherSpecs } from './outbox-config.ts';
import { COMMAND_SETTINGS, type Command, describeSetting, SETTINGS, type SettingName, type Settings } from './settings.ts';
import { parseShardingSettings, type ShardingConfig } from './sharding-config.ts';

/** Start-up stops with exit code 2 and this message; `setting` names the variable. */
export class ConfigError extends Error {
  readonly code = 'INVALID_CONFIG';
  constructor(
    message: string,
    readonly setting?: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Parsed = { [K in SettingName]: z.output<Settings[K][1]> };

const envSchema = z.object(
  Object.fromEntries(Object.entries(SETTINGS).map(([k, v]) => [k, v[1]])) as { [K in SettingName]: Settings[K][1] },
);

export interface DaemonConfig {
  databaseUrl: string | undefined;
  /** How DATABASE_URL reaches PostgreSQL, and the URL straight to it (for what needs a session). */
  pooler: 'none' | 'transaction';
  directUrl: string | undefined;
  port: number;
  host: string;
  apiToken: string | undefined;
  schema: string;
  drainMs: number;
  poolSize: number;
  /** Absolute path. */
  dataDir: string;
  /** Unset: the embedded server's remembered port, or a free one (embedded-pg.ts). */
  pgPort: number | undefined;
  /** Absolute path, when set. */
  handlersPath: string | undefined;
  demoHandlers: boolean;
  bodyLimitBytes: number;
  /** Bounds of the HTTP server: time to receive a request, connections per client address (0: no cap). */
  http: { requestTimeoutMs: number; maxConnectionsPerAddress: number };
  /** Host names beyond the bind address and loopback names; '*' turns the Host check off. */
  allowedHosts: readonly string[] | '*' | undefined;
  logLevel: Parsed['LOG_LEVEL'];
  /** Outbox destinations (validated, not yet built) and whether to run a relay. */
  outbox: { publishers: PublisherSpecs; relay: boolean };
  /** Options for createBaton (only what was set; the engine applies its own defaults). */
  engine: EngineConfigInput;
  /** BATON_CLUSTERS and its routes: queues sharded across several databases (instead of DATABASE_URL). */
  sharding: ShardingConfig | undefined;
}

/**
 * Settings whose empty value means something, so an empty variable is read as set (not as
 * unset): `BATON_QUEUES=` produces only, exactly as `--queues=` does.
 */
const EMPTY_IS_A_VALUE: ReadonlySet<SettingName> = new Set(['BATON_QUEUES']);

/** Settings whose value an error message never repeats (it may hold a password or a token). */
const SECRET_SETTINGS: ReadonlySet<SettingName> = new Set([
  'BATON_API_TOKEN',
  'DATABASE_URL',
  'BATON_DIRECT_URL',
  'BATON_CLUSTERS',
  'BATON_OUTBOX_PUBLISHERS',
]);

/**
 * Builds the config of `command` from `env` (empty strings count as unset, except for the
 * settings in EMPTY_IS_A_VALUE) overlaid by
 * `flags` (parsed --kebab-case values). Only the settings the command reads are read;
 * the rest keep their defaults. Throws ConfigError naming the first bad setting(s).
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  flags: Record<string, string | boolean | undefined> = {},
  cwd: string = process.cwd(),
  command: Command = 'serve',
): DaemonConfig {
  const raw: Record<string, string> = {};
  for (const name of COMMAND_SETTINGS[command]) {
    const flag = SETTINGS[name][0];
    const fromFlag = flags[flag];
    const fromEnv = env[name];
    if (typeof fromFlag === 'string') raw[name] = fromFlag;
    else if (fromEnv !== undefined && (fromEnv !== '' || EMPTY_IS_A_VALUE.has(name))) raw[name] = fromEnv;
  }
  const parsed = envSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const name = String(i.path[0]) as SettingName;
      const got = raw[name] === undefined ? '' : ` (got ${JSON.stringify(SECRET_SETTINGS.has(name) ? '***' : raw[name])})`;
      return `${describeSetting(name)}: ${i.message}${got}`;
    });
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`, String(parsed.error.issues[0]?.path[0]));
  }
  const c = parsed.data as Parsed;
  if (c.BATON_POOLER === 'transaction' && c.DATABASE_URL === undefined) {
    throw new ConfigError(
      `invalid configuration: ${describeSetting('BATON_POOLER')}: transaction needs DATABASE_URL (the pooler's URL)`,
      'BATON_POOLER',
    );
  }
  if (c.BATON_DIRECT_URL !== undefined && c.BATON_POOLER !== 'transaction') {
    throw new ConfigError(
      `invalid configuration: ${describeSetting('BATON_DIRECT_URL')}: used only with BATON_POOLER=transaction`,
      'BATON_DIRECT_URL',
    );
  }
  const engine = definedOnly({
    schema: c.BATON_SCHEMA,
    queues: c.BATON_QUEUES,
    dispatch: c.BATON_DISPATCH,
    fairness: c.BATON_FAIRNESS,
    claimIntoRunning: c.BATON_CLAIM_INTO_RUNNING,
    leader: c.BATON_LEADER,
    leaderLeaseMs: c.BATON_LEADER_LEASE_MS,
    leaseMs: c.BATON_LEASE_MS,
    pollIntervalMs: c.BATON_POLL_INTERVAL_MS,
    drainMs: c.BATON_DRAIN_MS,
    maxAttemptsDefault: c.BATON_MAX_ATTEMPTS,
    backoffBaseMs: c.BATON_BACKOFF_BASE_MS,
    backoffCapMs: c.BATON_BACKOFF_CAP_MS,
  });
  checkEngineRules(engine);
  const sharding = parseShardingSettings(
    {
      clusters: c.BATON_CLUSTERS,
      routes: c.BATON_QUEUE_ROUTES,
      defaultCluster: c.BATON_DEFAULT_CLUSTER,
      databaseUrl: c.DATABASE_URL,
      pooler: c.BATON_POOLER,
    },
    command === 'serve' ? c.BATON_QUEUES : undefined,
  );
  let publishers: PublisherSpecs = {};
  if (c.BATON_OUTBOX_PUBLISHERS !== undefined) {
    try {
      publishers = parsePublisherSpecs(c.BATON_OUTBOX_PUBLISHERS, cwd);
    } catch (err) {
      throw new ConfigError(
        `invalid configuration: ${describeSetting('BATON_OUTBOX_PUBLISHERS')}: ${(err as Error).message}`,
        'BATON_OUTBOX_PUBLISHERS',
      );
    }
  }
  return Object.freeze({
    databaseUrl: c.DATABASE_URL,
    pooler: c.BATON_POOLER,
    directUrl: c.BATON_DIRECT_URL,
    port: c.PORT,
    host: c.HOST,
    apiToken: c.BATON_API_TOKEN,
    schema: c.BATON_SCHEMA,
    drainMs: c.BATON_DRAIN_MS,
    poolSize: c.BATON_POOL_SIZE,
    dataDir: path.resolve(cwd, c.BATON_DATA_DIR),
    pgPort: c.BATON_PG_PORT,
    handlersPath: c.BATON_HANDLERS === undefined ? undefined : path.resolve(cwd, c.BATON_HANDLERS),
    demoHandlers: c.BATON_DEMO_HANDLERS,
    bodyLimitBytes: c.BATON_BODY_LIMIT_BYTES,
    http: Object.freeze({ requestTimeoutMs: c.BATON_REQUEST_TIMEOUT_MS, maxConnectionsPerAddress: c.BATON_MAX_CONNECTIONS_PER_IP }),
    allowedHosts: c.BATON_ALLOWED_HOSTS,
    logLevel: c.LOG_LEVEL,
    outbox: { publishers, relay: c.BATON_OUTBOX_RELAY },
    engine: Object.freeze(engine),
    sharding,
  });
}

/** Engine field -> the setting that feeds it, so cross-field errors name what the user typed. */
const ENGINE_FIELD_SETTING: Partial<Record<keyof EngineConfigInput, SettingName>> = {
  leaseMs: 'BATON_LEASE_MS',
  heartbeatMs: 'BATON_LEASE_MS',
  heartbeatDeadlineMs: 'BATON_LEASE_MS',
  pollIntervalMs: 'BATON_POLL_INTERVAL_MS',
  backoffCapMs: 'BATON_BACKOFF_CAP_MS',
  backoffBaseMs: 'BATON_BACKOFF_BASE_MS',
  maxAttemptsDefault: 'BATON_MAX_ATTEMPTS',
  queues: 'BATON_QUEUES',
  schema: 'BATON_SCHEMA',
  drainMs: 'BATON_DRAIN_MS',
  leader: 'BATON_LEADER',
  leaderLeaseMs: 'BATON_LEADER_LEASE_MS',
};

/** Runs the engine's own schema now, so its rules fail start-up with the setting's name. */
function checkEngineRules(engine: EngineConfigInput): void {
  const r = engineConfigSchema.safeParse(engine);
  if (r.success) return;
  const lines = r.error.issues.map((i) => {
    const field = String(i.path[0]) as keyof EngineConfigInput;
    const setting = ENGINE_FIELD_SETTING[field];
    return `${setting ? describeSetting(setting) : field}: ${i.message}`;
  });
  const first = ENGINE_FIELD_SETTING[String(r.error.issues[0]?.path[0]) as keyof EngineConfigInput];
  throw new ConfigError(`invalid configuration: ${lines.join('; ')}`, first);
}

function definedOnly<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
