// `baton keys create|list|revoke`: API keys (docs/security.md), straight in the database like
// `baton enqueue`. A new key's token is printed once, on stdout, and never again.

import type { Logger as PinoLogger } from 'pino';
import { z } from 'zod';
import { type ClosableApiKeys, openApiKeys } from '../create-api-keys.ts';
import { createBaton } from '../create-baton.ts';
import { isBatonError } from '../types/errors.ts';
import { connectionOptions, openDatabase } from './database.ts';
import { ConfigError, type DaemonConfig } from './env.ts';
import { PlainError } from './plain-error.ts';

type Flags = Record<string, string | boolean | undefined>;

export type KeySubcommand = 'create' | 'list' | 'revoke';

const notHere = (sub: string) => z.undefined({ error: `is not a flag of baton keys ${sub}` }).optional();

const FLAGS = {
  create: z.object({
    tenant: z.string().min(1).optional(),
    role: z.enum(['tenant', 'admin']).optional(),
    name: z.string().min(1).max(200).optional(),
    all: notHere('create'),
  }),
  list: z.object({ tenant: z.string().min(1).optional(), all: z.boolean().optional(), role: notHere('list'), name: notHere('list') }),
  revoke: z.object({ tenant: notHere('revoke'), role: notHere('revoke'), name: notHere('revoke'), all: notHere('revoke') }),
};

function parse<T>(schema: z.ZodType<T>, flags: Flags, sub: string): T {
  const { help: _, ...own } = flags;
  const r = schema.safeParse(Object.fromEntries(Object.entries(own).filter(([k]) => ['tenant', 'role', 'name', 'all'].includes(k))));
  if (!r.success) {
    throw new ConfigError(`invalid keys ${sub} flags: ${r.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`).join('; ')}`);
  }
  return r.data;
}

async function withKeys(config: DaemonConfig, logger: PinoLogger, fn: (keys: ClosableApiKeys) => Promise<void>): Promise<void> {
  const db = await openDatabase(config, logger);
  try {
    // The table may not exist yet on a fresh database: migrate like `baton enqueue` does.
    const baton = createBaton({ ...config.engine, queues: {}, reaper: false, ...connectionOptions(config, db), poolSize: 1 });
    try {
      await baton.migrate();
    } finally {
      await baton.stop({ drainMs: 0 });
    }
    const keys = openApiKeys({ connectionString: db.connectionString, pooler: config.pooler, schema: config.schema });
    try {
      await fn(keys);
    } catch (err) {
      // A refused input or an unknown id is the user's to fix, not a crash.
      if (isBatonError(err) && err.code === 'INVALID_ARGUMENT') throw new ConfigError(err.message);
      if (isBatonError(err) && err.code === 'API_KEY_NOT_FOUND') throw new PlainError(err.message);
      throw err;
    } finally {
      await keys.close();
    }
  } finally {
    await db.close();
  }
}

const print = (v: unknown) => process.stdout.write(`${JSON.stringify(v)}\n`);

export async function runKeys(config: DaemonConfig, logger: PinoLogger, sub: KeySubcommand, id: string | undefined, flags: Flags) {
  if (sub === 'create') {
    const f = parse(FLAGS.create, flags, 'create');
    await withKeys(config, logger, async (keys) => {
      const { key, token } = await keys.create({
        role: f.role ?? 'tenant',
        ...(f.tenant === undefined ? {} : { tenantId: f.tenant }),
        ...(f.name === undefined ? {} : { name: f.name }),
      });
      print({ key, token });
      process.stderr.write(`baton: key ${key.id} created; store its token now, it is not shown again\n`);
    });
  } else if (sub === 'list') {
    const f = parse(FLAGS.list, flags, 'list');
    await withKeys(config, logger, async (keys) => {
      print({ keys: await keys.list({ ...(f.tenant === undefined ? {} : { tenantId: f.tenant }), includeRevoked: f.all === true }) });
    });
  } else {
    parse(FLAGS.revoke, flags, 'revoke');
    if (id === undefined) throw new ConfigError('baton keys revoke needs the key id (see baton keys list)');
    await withKeys(config, logger, async (keys) => {
      print({ key: await keys.revoke(id) });
    });
  }
}
