// `baton cron list` (reads the schedules table like `baton enqueue` reaches the database)
// and `baton cron preview` (no database: the expression module alone).

import type { Logger as PinoLogger } from 'pino';
import { z } from 'zod';
import { PREVIEW_COUNT_MAX, SCHEDULE_LIST_MAX } from '../core/cron/api.ts';
import { parseCron, previewCron } from '../core/cron/expression.ts';
import { createBaton } from '../create-baton.ts';
import { isBatonError } from '../types/errors.ts';
import { connectionOptions, openDatabase } from './database.ts';
import { ConfigError, type DaemonConfig } from './env.ts';

type Flags = Record<string, string | boolean | undefined>;

function parse<T>(schema: z.ZodType<T>, flags: Flags, what: string): T {
  const r = schema.safeParse(flags);
  if (!r.success) {
    throw new ConfigError(`invalid ${what} flags: ${r.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`).join('; ')}`);
  }
  return r.data;
}

const previewFlags = z.object({
  cron: z.string({ error: 'is required' }).min(1),
  timezone: z.string({ error: 'is required' }).min(1),
  count: z.coerce.number().int().min(1).max(PREVIEW_COUNT_MAX).optional(),
  from: z.iso
    .datetime({ offset: true, error: 'must be an ISO 8601 instant with Z or an offset' })
    .transform((s) => new Date(s))
    .optional(),
  tenant: z.undefined({ error: 'is a flag of baton cron list' }).optional(),
  limit: z.undefined({ error: 'is a flag of baton cron list' }).optional(),
});

/** Prints the next fire instants; a bad expression or zone is a usage error (exit 2). */
export function runCronPreview(flags: Flags): void {
  const f = parse(previewFlags, flags, 'cron preview');
  try {
    const schedule = parseCron(f.cron, f.timezone);
    const fires = previewCron(schedule, f.count ?? 10, f.from ?? new Date());
    process.stdout.write(`${JSON.stringify({ cron: schedule.expression, timezone: schedule.timezone, fires })}\n`);
  } catch (err) {
    if (isBatonError(err)) throw new ConfigError(err.message);
    throw err;
  }
}

const listFlags = z.object({
  tenant: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(SCHEDULE_LIST_MAX).optional(),
  cron: z.undefined({ error: 'is a flag of baton cron preview' }).optional(),
  timezone: z.undefined({ error: 'is a flag of baton cron preview' }).optional(),
  count: z.undefined({ error: 'is a flag of baton cron preview' }).optional(),
  from: z.undefined({ error: 'is a flag of baton cron preview' }).optional(),
});

/** Prints {"schedules":[...]} read from the database. */
export async function runCronList(config: DaemonConfig, logger: PinoLogger, flags: Flags): Promise<void> {
  const f = parse(listFlags, flags, 'cron list');
  const db = await openDatabase(config, logger);
  try {
    const baton = createBaton({ ...config.engine, queues: {}, reaper: false, ...connectionOptions(config, db), poolSize: 1 });
    try {
      await baton.migrate();
      const schedules = await baton.cron.list({ ...(f.tenant ? { tenantId: f.tenant } : {}), limit: f.limit ?? 100 });
      process.stdout.write(`${JSON.stringify({ schedules })}\n`);
    } finally {
      await baton.stop({ drainMs: 0 });
    }
  } finally {
    await db.close();
  }
}
