// The one-shot subcommands: `baton migrate`, `baton enqueue`, `baton cancel`, `baton workflow
// start`, `baton bench`.
// They reach the same database as `serve` (DATABASE_URL or the embedded server,
// attaching to it when a daemon already runs it) and leave it as they found it.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger as PinoLogger } from 'pino';
import { z } from 'zod';
import type { Baton } from '../core/baton.ts';
import { migrate } from '../db/migrate.ts';
import { parseConnectionString } from '../db/pg/multi-host.ts';
import { openPool } from '../db/pg/open-pool.ts';
import { isBatonError } from '../types/errors.ts';
import type { JobSpec } from '../types/job.ts';
import type { StartRunOptions } from '../types/workflow.ts';
import { type DatabaseHandle, openDatabase, openEngine } from './database.ts';
import { ConfigError, type DaemonConfig } from './env.ts';
import { PlainError } from './plain-error.ts';

async function withDatabase<T>(config: DaemonConfig, logger: PinoLogger, fn: (db: DatabaseHandle) => Promise<T>): Promise<T> {
  const db = await openDatabase(config, logger);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** Applies pending migrations; prints `{ applied: [...] }`. */
export async function runMigrate(config: DaemonConfig, logger: PinoLogger): Promise<void> {
  await withDatabase(config, logger, async (db) => {
    if (config.pooler === 'transaction' && config.directUrl === undefined) {
      throw new PlainError('migrations hold a session lock, which a transaction pooler cannot keep: set BATON_DIRECT_URL');
    }
    // Sharded: each cluster in turn, its files named <cluster>:<file>.
    const targets = config.sharding ? Object.entries(config.sharding.clusters) : [['', config.directUrl ?? db.connectionString] as const];
    const applied: string[] = [];
    for (const [cluster, url] of targets) {
      const pool = openPool({ ...parseConnectionString(url, cluster ? 'BATON_CLUSTERS' : 'BATON_DIRECT_URL'), max: 1 });
      try {
        const result = await migrate(pool, { schema: config.schema });
        applied.push(...result.applied.map((f) => (cluster ? `${cluster}:${f}` : f)));
      } finally {
        await pool.end();
      }
    }
    process.stdout.write(`${JSON.stringify({ schema: config.schema, applied })}\n`);
  });
}

const enqueueFlagsSchema = z.object({
  type: z.string({ error: 'is required' }).min(1),
  payload: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (s === undefined) return {};
      try {
        return JSON.parse(s) as unknown;
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `is not JSON: ${(err as Error).message}` });
        return z.NEVER;
      }
    }),
  queue: z.string().min(1).optional(),
  tenant: z.string().min(1).optional(),
  priority: z.coerce.number().int().optional(),
  'delay-ms': z.coerce.number().int().min(0).optional(),
  'max-attempts': z.coerce.number().int().min(1).optional(),
  'idempotency-key': z.string().min(1).optional(),
});

/** Parses the enqueue flags into a JobSpec; ConfigError names the bad flag. */
export function parseEnqueueFlags(flags: Record<string, unknown>): JobSpec {
  const r = enqueueFlagsSchema.safeParse(flags);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`);
    throw new ConfigError(`invalid enqueue flags: ${lines.join('; ')}`);
  }
  const f = r.data;
  const spec: JobSpec = { jobType: f.type, payload: f.payload };
  if (f.queue !== undefined) spec.queue = f.queue;
  if (f.tenant !== undefined) spec.tenantId = f.tenant;
  if (f.priority !== undefined) spec.priority = f.priority;
  if (f['delay-ms'] !== undefined) spec.delayMs = f['delay-ms'];
  if (f['max-attempts'] !== undefined) spec.maxAttempts = f['max-attempts'];
  if (f['idempotency-key'] !== undefined) spec.idempotencyKey = f['idempotency-key'];
  return spec;
}

/**
 * A producer-only engine on the database, migrated, for one command: no queues worked and no
 * reaper, so a one-shot never picks up a job itself; no start(): it needs no presence row,
 * listener or workers (an enqueue NOTIFYs by itself).
 */
async function withProducer<T>(config: DaemonConfig, logger: PinoLogger, poolSize: number, fn: (baton: Baton) => Promise<T>): Promise<T> {
  return withDatabase(config, logger, async (db) => {
    const baton = openEngine(config, db, {
      ...config.engine,
      queues: {},
      reaper: false,
      poolSize,
      logger: logger.child({ component: 'engine' }),
    });
    try {
      await baton.migrate();
      return await fn(baton);
    } finally {
      await baton.stop({ drainMs: 0 });
    }
  });
}

/** Enqueues one job straight into the database (a running daemon is woken by NOTIFY); prints `{ created, job }`. */
export async function runEnqueue(config: DaemonConfig, logger: PinoLogger, spec: JobSpec): Promise<void> {
  await withProducer(config, logger, 2, async (baton) => {
    const result = await baton.enqueue(spec);
    process.stdout.write(`${JSON.stringify({ created: result.created, job: result.job, warnings: result.warnings })}\n`);
  });
}

const jsonFlag = z
  .string()
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return null;
    try {
      return JSON.parse(s) as unknown;
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `is not JSON: ${(err as Error).message}` });
      return z.NEVER;
    }
  });

const workflowStartFlagsSchema = z.object({
  name: z.string({ error: 'is required' }).min(1),
  input: jsonFlag,
  tenant: z.string().min(1).optional(),
  'idempotency-key': z.string().min(1).optional(),
  // JSON objects, checked by the engine as a library start's options are (a bad one is INVALID_ARGUMENT, exit 2).
  debounce: jsonFlag,
  throttle: jsonFlag,
});

/** What `baton workflow start` starts. */
export interface WorkflowStart {
  name: string;
  input: unknown;
  opts: Pick<StartRunOptions, 'tenantId' | 'idempotencyKey' | 'debounce' | 'throttle'>;
}

/** Parses the flags of `baton workflow start`; ConfigError names the bad flag. */
export function parseWorkflowStartFlags(flags: Record<string, unknown>): WorkflowStart {
  const r = workflowStartFlagsSchema.safeParse(flags);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`);
    throw new ConfigError(`invalid workflow start flags: ${lines.join('; ')}`);
  }
  const f = r.data;
  const opts: WorkflowStart['opts'] = {};
  if (f.tenant !== undefined) opts.tenantId = f.tenant;
  if (f['idempotency-key'] !== undefined) opts.idempotencyKey = f['idempotency-key'];
  if (f.debounce !== null) opts.debounce = f.debounce as StartRunOptions['debounce'];
  if (f.throttle !== null) opts.throttle = f.throttle as StartRunOptions['throttle'];
  return { name: f.name, input: f.input, opts };
}

/**
 * `baton workflow start`: a run of any workflow in the registry of defined workflows, from a
 * producer that defines none; prints `{ run, duplicate }`. An unregistered name is a plain
 * failure (exit 1), bad options a usage error (exit 2).
 */
export async function runWorkflowStart(config: DaemonConfig, logger: PinoLogger, start: WorkflowStart): Promise<void> {
  await withProducer(config, logger, 2, async (baton) => {
    try {
      const result = await baton.startWorkflow(start.name, start.input, start.opts);
      process.stdout.write(`${JSON.stringify(result)}\n`);
    } catch (err) {
      if (isBatonError(err) && err.code === 'INVALID_ARGUMENT') throw new ConfigError(err.message);
      if (isBatonError(err) && err.code === 'WORKFLOW_NOT_FOUND') throw new PlainError(`${err.code}: ${err.message}`);
      throw err;
    }
  });
}

/**
 * `baton cancel JOB_ID`: admin.cancel on the database; prints `{ job, cancelRequested }`. A
 * malformed id is a usage error; an unknown or finished job a plain failure (exit 1).
 */
export async function runCancel(config: DaemonConfig, logger: PinoLogger, id: string): Promise<void> {
  await withProducer(config, logger, 1, async (baton) => {
    try {
      const job = await baton.admin.cancel(id);
      process.stdout.write(`${JSON.stringify({ job, cancelRequested: job.state !== 'cancelled' })}\n`);
    } catch (err) {
      if (isBatonError(err) && err.code === 'INVALID_ARGUMENT') throw new ConfigError(err.message);
      if (isBatonError(err) && (err.code === 'JOB_NOT_FOUND' || err.code === 'JOB_STATE_CONFLICT'))
        throw new PlainError(`${err.code}: ${err.message}`);
      throw err;
    }
  });
}

/** Delegates to the benchmark harness (bench/main.ts) in a child process, forwarding argv and the exit code. */
export function runBench(argv: string[]): Promise<number> {
  const script = fileURLToPath(new URL('../../bench/main.ts', import.meta.url));
  let tsx: string;
  try {
    tsx = import.meta.resolve('tsx');
  } catch {
    tsx = '';
  }
  if (!tsx || !existsSync(script)) {
    process.stderr.write(
      'baton: the benchmark runs from a source checkout of Baton (npm install; npm run bench), not from the installed package\n',
    );
    return Promise.resolve(1);
  }
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', tsx, script, ...argv], { stdio: 'inherit' });
    const forward = (sig: NodeJS.Signals) => () => child.kill(sig);
    process.on('SIGINT', forward('SIGINT'));
    process.on('SIGTERM', forward('SIGTERM'));
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 + 2 : 1)));
  });
}
