// The daemon's configuration: one zod schema over environment variables, each
// also a CLI flag (flags win). process.env is read once, here; a bad value is a
// ConfigError naming the setting, never a silent fallback to a default.

import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  BACKOFF_BASE_MS_DEFAULT,
  BACKOFF_CAP_MS_DEFAULT,
  DRAIN_MS_DEFAULT,
  type EngineConfigInput,
  engineConfigSchema,
  LEADER_LEASE_MS_DEFAULT,
  LEASE_MS_DEFAULT,
  MAX_ATTEMPTS_DEFAULT,
  NAME_PATTERN,
  POLL_INTERVAL_MS_DEFAULT,
  SCHEMA_DEFAULT,
} from '../core/config.ts';
import { isValidSchemaName } from '../driver/schema-name.ts';
import { allowedHostsSetting } from '../http/allowed-hosts.ts';
import { MAX_CONNECTIONS_PER_ADDRESS_DEFAULT, REQUEST_TIMEOUT_MS_DEFAULT } from './http-server.ts';
import { type PublisherSpecs, parsePublisherSpecs } from './outbox-config.ts';

export const PORT_DEFAULT = 8080;
export const HOST_DEFAULT = '127.0.0.1';
export const QUEUES_DEFAULT = 'default:10';
export const DATA_DIR_DEFAULT = '.baton-data';
export const POOL_SIZE_DEFAULT = 10;
export const BODY_LIMIT_BYTES_DEFAULT = 1_048_576;

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

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], { error: 'must be true or false' })
  .transform((v) => ['true', '1', 'yes', 'on'].includes(v));
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** "default:10,emails:4" -> { default: 10, emails: 4 }. Empty string: produce only (also as BATON_QUEUES=). */
const queueSpec = z.string().transform((raw, ctx) => {
  const out: Record<string, number> = {};
  for (const part of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(.+):(\d+)$/.exec(part);
    const name = m?.[1];
    const n = Number(m?.[2]);
    if (!name || !NAME_PATTERN.test(name) || !Number.isInteger(n) || n < 1 || n > 10_000) {
      ctx.addIssue({ code: 'custom', message: `"${part}" is not queue:concurrency (concurrency 1-10000)` });
      return z.NEVER;
    }
    out[name] = n;
  }
  return out;
});

/** Every setting: env name -> [flag, zod schema, help, shown default]. The table drives parsing and --help. */
export const SETTINGS = {
  DATABASE_URL: [
    'database-url',
    z
      .string()
      .url()
      .refine((u) => /^postgres(ql)?:\/\//.test(u), 'must be a postgres:// or postgresql:// URL')
      .optional(),
    'PostgreSQL URL; unset: embedded PostgreSQL in BATON_DATA_DIR',
    '(embedded)',
  ],
  PORT: ['port', int(0, 65_535).default(PORT_DEFAULT), 'HTTP port (0 picks a free one)', String(PORT_DEFAULT)],
  HOST: ['host', z.string().min(1).default(HOST_DEFAULT), 'HTTP bind address (0.0.0.0 in containers)', HOST_DEFAULT],
  BATON_API_TOKEN: [
    'api-token',
    z.string().min(8).optional(),
    'admin token for /api/* and /metrics, beside API keys (baton keys; min 8 chars; health checks and the console page stay open)',
    '(none)',
  ],
  BATON_SCHEMA: [
    'schema',
    z.string().refine(isValidSchemaName, 'must match ^[a-z_][a-z0-9_]{0,62}$').default(SCHEMA_DEFAULT),
    'PostgreSQL schema of the tables',
    SCHEMA_DEFAULT,
  ],
  BATON_QUEUES: ['queues', queueSpec.prefault(QUEUES_DEFAULT), 'queues this process works, queue:concurrency,...', QUEUES_DEFAULT],
  BATON_DISPATCH: [
    'dispatch',
    z.enum(['notify', 'poll']).default('notify'),
    'wake-ups by LISTEN/NOTIFY (+ polling) or polling only',
    'notify',
  ],
  BATON_FAIRNESS: [
    'fairness',
    z.enum(['tenant', 'none']).default('tenant'),
    "claims round-robin across tenants ('tenant') or FIFO per queue ('none'), for every queue",
    'tenant',
  ],
  BATON_CLAIM_INTO_RUNNING: ['claim-into-running', bool.default(true), 'claim straight into running (skip leased)', 'true'],
  BATON_LEADER: ['leader', bool.optional(), 'may be elected leader (runs cron, retention, pruning), with or without queues', 'true'],
  BATON_LEADER_LEASE_MS: [
    'leader-lease-ms',
    int(200, 3_600_000).optional(),
    "the leader's lease; another process takes over within about one lease of its last renewal",
    String(LEADER_LEASE_MS_DEFAULT),
  ],
  BATON_LEASE_MS: ['lease-ms', int(100, 86_400_000).optional(), 'lease length; heartbeats every lease/3', String(LEASE_MS_DEFAULT)],
  BATON_POLL_INTERVAL_MS: ['poll-interval-ms', int(1, 86_400_000).optional(), 'fallback poll period', String(POLL_INTERVAL_MS_DEFAULT)],
  BATON_DRAIN_MS: [
    'drain-ms',
    int(0, 86_400_000).default(DRAIN_MS_DEFAULT),
    'on SIGTERM, how long in-flight jobs may finish',
    String(DRAIN_MS_DEFAULT),
  ],
  BATON_MAX_ATTEMPTS: ['max-attempts', int(1, 1_000).optional(), 'default attempt budget per job', String(MAX_ATTEMPTS_DEFAULT)],
  BATON_BACKOFF_BASE_MS: [
    'backoff-base-ms',
    int(1, 86_400_000).optional(),
    'retry backoff base (full jitter)',
    String(BACKOFF_BASE_MS_DEFAULT),
  ],
  BATON_BACKOFF_CAP_MS: ['backoff-cap-ms', int(1, 86_400_000).optional(), 'retry backoff cap', String(BACKOFF_CAP_MS_DEFAULT)],
  BATON_POOL_SIZE: [
    'pool-size',
    int(1, 1_000).default(POOL_SIZE_DEFAULT),
    'max PostgreSQL connections of the pool',
    String(POOL_SIZE_DEFAULT),
  ],
  BATON_DATA_DIR: [
    'data-dir',
    z.string().min(1).default(DATA_DIR_DEFAULT),
    'embedded PostgreSQL data (relative to the cwd); kept across restarts',
    DATA_DIR_DEFAULT,
  ],
  BATON_PG_PORT: [
    'pg-port',
    int(1, 65_535).optional(),
    'port of the embedded PostgreSQL (127.0.0.1 only)',
    '(54329 or a free one, remembered in the data dir)',
  ],
  BATON_HANDLERS: ['handlers', z.string().min(1).optional(), 'module exporting `handlers` (or default): jobType -> handler', '(none)'],
  BATON_DEMO_HANDLERS: [
    'demo-handlers',
    bool.default(true),
    'register the demo handlers noop, sleep, boom, poison and the place-order workflow',
    'true',
  ],
  BATON_BODY_LIMIT_BYTES: [
    'body-limit-bytes',
    int(1, 1_073_741_824).default(BODY_LIMIT_BYTES_DEFAULT),
    'largest accepted request body (413 above)',
    String(BODY_LIMIT_BYTES_DEFAULT),
  ],
  BATON_REQUEST_TIMEOUT_MS: [
    'request-timeout-ms',
    int(100, 3_600_000).default(REQUEST_TIMEOUT_MS_DEFAULT),
    'longest time to receive one request, headers and body (408 and the connection closed after)',
    String(REQUEST_TIMEOUT_MS_DEFAULT),
  ],
  BATON_MAX_CONNECTIONS_PER_IP: [
    'max-connections-per-ip',
    int(0, 1_000_000).default(MAX_CONNECTIONS_PER_ADDRESS_DEFAULT),
    'most connections one client address may hold at once, 0 for no cap (one more: 429, closed)',
    String(MAX_CONNECTIONS_PER_ADDRESS_DEFAULT),
  ],
  BATON_ALLOWED_HOSTS: [
    'allowed-hosts',
    allowedHostsSetting.optional(),
    'more Host names the HTTP server answers to (name or name:port, comma-separated; * turns the Host check off)',
    '(none)',
  ],
  BATON_OUTBOX_PUBLISHERS: [
    'outbox-publishers',
    z.string().min(1).optional(),
    'outbox destinations as JSON {"name":{"type":"webhook"|"rabbitmq"|"nats",...}}, or @file.json (docs/outbox.md)',
    '(none)',
  ],
  BATON_OUTBOX_RELAY: ['outbox-relay', bool.default(true), 'run an outbox relay in this process when publishers are configured', 'true'],
  LOG_LEVEL: [
    'log-level',
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    'pino log level',
    'info',
  ],
} as const;

type Settings = typeof SETTINGS;
export type SettingName = keyof Settings;
type Parsed = { [K in SettingName]: z.output<Settings[K][1]> };

const envSchema = z.object(
  Object.fromEntries(Object.entries(SETTINGS).map(([k, v]) => [k, v[1]])) as { [K in SettingName]: Settings[K][1] },
);

export interface DaemonConfig {
  databaseUrl: string | undefined;
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
}

/** The flag spelling of a setting, e.g. `PORT (--port)`. */
export function describeSetting(name: SettingName): string {
  return `${name} (--${SETTINGS[name][0]})`;
}

/** What the one-shot commands reach the database with (embedded or DATABASE_URL), and log. */
const DATABASE_SETTINGS = ['DATABASE_URL', 'BATON_SCHEMA', 'BATON_DATA_DIR', 'BATON_PG_PORT', 'LOG_LEVEL'] as const;

/**
 * The settings each command reads, which are also the only setting flags it accepts
 * and the only ones its --help lists: `serve` reads them all; `migrate` only the
 * database; `enqueue` also what its producer reads (the default attempt budget, and
 * whether to NOTIFY). A command never validates a setting it does not read, so a
 * shared environment with, say, a bad PORT does not stop a migration.
 */
export const COMMAND_SETTINGS = {
  serve: Object.keys(SETTINGS) as SettingName[],
  migrate: DATABASE_SETTINGS,
  enqueue: [...DATABASE_SETTINGS, 'BATON_DISPATCH', 'BATON_MAX_ATTEMPTS'],
  cron: DATABASE_SETTINGS,
  keys: DATABASE_SETTINGS,
  cancel: DATABASE_SETTINGS,
} as const satisfies Record<string, readonly SettingName[]>;

export type Command = keyof typeof COMMAND_SETTINGS;

/** parseArgs options for the settings of `command`, to merge with its own flags. */
function settingFlags(command: Command): Record<string, { type: 'string' }> {
  return Object.fromEntries(COMMAND_SETTINGS[command].map((name) => [SETTINGS[name][0], { type: 'string' as const }]));
}

/** Lines for `baton <command> --help`: flag, env, default, description, for the settings it reads. */
export function settingsHelp(command: Command): string {
  return COMMAND_SETTINGS[command]
    .map((env) => {
      const [flag, , help, def] = SETTINGS[env];
      return `  --${flag.padEnd(20)} ${env.padEnd(26)} [${def}]\n      ${help}`;
    })
    .join('\n');
}

/**
 * Settings whose empty value means something, so an empty variable is read as set (not as
 * unset): `BATON_QUEUES=` produces only, exactly as `--queues=` does.
 */
const EMPTY_IS_A_VALUE: ReadonlySet<SettingName> = new Set(['BATON_QUEUES']);

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
      const got =
        raw[name] === undefined
          ? ''
          : ` (got ${JSON.stringify(name === 'BATON_API_TOKEN' || name === 'DATABASE_URL' || name === 'BATON_OUTBOX_PUBLISHERS' ? '***' : raw[name])})`;
      return `${describeSetting(name)}: ${i.message}${got}`;
    });
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`, String(parsed.error.issues[0]?.path[0]));
  }
  const c = parsed.data as Parsed;
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

/**
 * Parses argv for `command`: the flags of the settings it reads plus `extra` (its
 * own). Unknown flags, another command's setting flags and stray positionals are
 * ConfigErrors (a typo must not be ignored, nor a setting the command would not use).
 */
export function parseFlags(
  argv: string[],
  command: Command = 'serve',
  extra: Record<string, { type: 'string' | 'boolean'; short?: string }> = {},
): Record<string, string | boolean | undefined> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...settingFlags(command), ...extra, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length > 0) throw new ConfigError(`unexpected argument: ${positionals[0]}`);
    return values as Record<string, string | boolean | undefined>;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    // parseArgs names the option (without any =value) in quotes; say whose flag it is instead.
    const flag =
      (err as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'(-[^']+)'/.exec((err as Error).message)?.[1] : undefined;
    if (flag === undefined) throw new ConfigError((err as Error).message);
    const owner = (Object.keys(COMMAND_SETTINGS) as Command[]).find((c) => flag.startsWith('--') && flag.slice(2) in settingFlags(c));
    throw new ConfigError(
      owner === undefined
        ? `unknown flag ${flag} (see baton ${command} --help)`
        : `${flag} is a flag of "baton ${owner}", not of "baton ${command}" (see baton ${command} --help)`,
    );
  }
}
