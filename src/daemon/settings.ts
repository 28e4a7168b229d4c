// Every setting of the daemon in one table: env name -> flag, zod schema, help and shown default,
// and which settings each command reads. The table drives parsing (env.ts), flags and --help
// (flags.ts), so a setting added here is read, accepted and listed everywhere at once.

import { z } from 'zod';
import {
  BACKOFF_BASE_MS_DEFAULT,
  BACKOFF_CAP_MS_DEFAULT,
  DRAIN_MS_DEFAULT,
  LEADER_LEASE_MS_DEFAULT,
  LEASE_MS_DEFAULT,
  MAX_ATTEMPTS_DEFAULT,
  NAME_PATTERN,
  POLL_INTERVAL_MS_DEFAULT,
  SCHEMA_DEFAULT,
} from '../core/config.ts';
import { ConnectionStringError, isMultiHost, parseConnectionString } from '../db/pg/multi-host.ts';
import { isValidSchemaName } from '../driver/schema-name.ts';
import { allowedHostsSetting } from '../http/allowed-hosts.ts';
import { MAX_CONNECTIONS_PER_ADDRESS_DEFAULT, REQUEST_TIMEOUT_MS_DEFAULT } from './http-server.ts';

export const PORT_DEFAULT = 8080;
export const HOST_DEFAULT = '127.0.0.1';
export const QUEUES_DEFAULT = 'default:10';
export const DATA_DIR_DEFAULT = '.baton-data';
export const POOL_SIZE_DEFAULT = 10;
export const BODY_LIMIT_BYTES_DEFAULT = 1_048_576;

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

/**
 * A PostgreSQL URL: one host, or several as libpq lists them (postgres://u@h1:5432,h2:5433/db,
 * with target_session_attrs read-write, primary or any), which WHATWG URL parsing refuses.
 */
export const pgUrl = z.string().superRefine((u, ctx) => {
  if (!/^postgres(ql)?:\/\//.test(u)) {
    ctx.addIssue({ code: 'custom', message: 'must be a postgres:// or postgresql:// URL' });
    return;
  }
  try {
    const c = parseConnectionString(u, 'URL');
    if (!isMultiHost(c)) new URL(u);
  } catch (err) {
    ctx.addIssue({
      code: 'custom',
      message: err instanceof ConnectionStringError ? err.message.replace(/^URL: /, '') : 'must be a valid URL',
    });
  }
});

/** Every setting: env name -> [flag, zod schema, help, shown default]. The table drives parsing and --help. */
export const SETTINGS = {
  DATABASE_URL: [
    'database-url',
    pgUrl.optional(),
    'PostgreSQL URL, or several hosts as libpq lists them (postgres://u@h1:5432,h2:5432/db: a writable one is used); unset: embedded PostgreSQL in BATON_DATA_DIR',
    '(embedded)',
  ],
  BATON_POOLER: [
    'pooler',
    z.enum(['none', 'transaction'], { error: 'must be none or transaction' }).default('none'),
    'how DATABASE_URL reaches PostgreSQL: none (directly) or transaction (through PgBouncer with pool_mode = transaction)',
    'none',
  ],
  BATON_DIRECT_URL: [
    'direct-url',
    pgUrl.optional(),
    'with BATON_POOLER=transaction: a URL straight to the server, for LISTEN, the presence lock and migrations; unset: polling only, pending migrations refused',
    '(none)',
  ],
  BATON_CLUSTERS: [
    'clusters',
    z.string().min(1).optional(),
    'several independent databases as name=URL, comma-separated (a=postgres://h1/db,b=postgres://h2/db): queues are sharded across them by BATON_QUEUE_ROUTES, each migrated at start (docs/scaling.md); instead of DATABASE_URL',
    '(none)',
  ],
  BATON_QUEUE_ROUTES: [
    'queue-routes',
    z.string().min(1).optional(),
    'with BATON_CLUSTERS: queue=cluster, comma-separated (emails=a,reports=b): where each queue is stored, worked and administered',
    '(none)',
  ],
  BATON_DEFAULT_CLUSTER: [
    'default-cluster',
    z.string().min(1).optional(),
    'with BATON_CLUSTERS: the cluster of queues BATON_QUEUE_ROUTES does not name, and of cron, workflows, the outbox and API keys; unset: an unrouted queue is refused, and the first cluster holds those',
    '(none)',
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
    // No default here: unset, the engine's own applies (notify, or poll through a transaction pooler with no direct URL).
    z.enum(['notify', 'poll']).optional(),
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

export type Settings = typeof SETTINGS;
export type SettingName = keyof Settings;

/** The flag spelling of a setting, e.g. `PORT (--port)`. */
export function describeSetting(name: SettingName): string {
  return `${name} (--${SETTINGS[name][0]})`;
}

/** What the one-shot commands reach the database with (embedded or DATABASE_URL), and log. */
const DATABASE_SETTINGS = [
  'DATABASE_URL',
  'BATON_POOLER',
  'BATON_DIRECT_URL',
  'BATON_CLUSTERS',
  'BATON_QUEUE_ROUTES',
  'BATON_DEFAULT_CLUSTER',
  'BATON_SCHEMA',
  'BATON_DATA_DIR',
  'BATON_PG_PORT',
  'LOG_LEVEL',
] as const;

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
  // A run's driving job: its producer NOTIFYs like enqueue's does.
  workflow: [...DATABASE_SETTINGS, 'BATON_DISPATCH'],
} as const satisfies Record<string, readonly SettingName[]>;

export type Command = keyof typeof COMMAND_SETTINGS;
