// Prepared statement names stay distinct under the server's 63-byte limit, whatever the schema
// name (up to 63 characters): built from every query module for the longest schema name, and
// run end to end by an engine on such a schema, which claims in several batch sizes.

import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIZE_IN_TEXT_MAX } from '../../src/db/pg/queries/job-fragments.ts';
import { statementName } from '../../src/db/pg/queries/statement-name.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { type Baton, createBaton } from '../../src/index.ts';
import { createMigratedDatabase, type TestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const LONGEST = `s${'x'.repeat(62)}`;
const QUERIES_DIR = new URL('../../src/db/pg/queries/', import.meta.url);

/** Every statement name reachable from `value`: objects, arrays, and bySize builders for each size. */
function namesIn(value: unknown, out: string[], seen = new Set<unknown>()): string[] {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) return out;
  seen.add(value);
  if (typeof value === 'function') {
    // A bySize builder carries its open (unsized) statement; other functions take other arguments.
    if (!('open' in value)) return out;
    for (let n = 1; n <= SIZE_IN_TEXT_MAX; n++) namesIn((value as unknown as (n: number) => unknown)(n), out, seen);
  }
  const name = (value as { name?: unknown }).name;
  if (typeof name === 'string' && typeof (value as { text?: unknown }).text === 'string') out.push(name);
  for (const v of Object.values(value)) namesIn(v, out, seen);
  return out;
}

async function allNames(schema: string): Promise<string[]> {
  const names: string[] = [];
  for (const file of readdirSync(QUERIES_DIR).filter((f) => f.endsWith('.ts'))) {
    const mod = (await import(new URL(file, QUERIES_DIR).href)) as Record<string, unknown>;
    for (const [key, build] of Object.entries(mod)) {
      if (key.endsWith('Queries') && typeof build === 'function') namesIn((build as (s: string) => unknown)(schema), names);
    }
  }
  return names;
}

describe('prepared statement names', () => {
  it('fit in 63 bytes and stay distinct for a schema name of 63 characters', async () => {
    const names = await allNames(quoteSchema(LONGEST));
    expect(names.length).toBeGreaterThan(150);
    for (const n of names) expect(Buffer.byteLength(n), n).toBeLessThanOrEqual(63);
    const kept = names.map((n) => n.slice(0, 63));
    expect(new Set(kept).size).toBe(new Set(names).size);
  });

  it('keep the readable <schema>.<key> form when it fits', () => {
    expect(statementName('"baton"', 'job_claim_10')).toBe('"baton".job_claim_10');
    const long = statementName(`"${LONGEST}"`, 'job_claim_10');
    expect(long).toMatch(/^baton_[0-9a-f]{40}$/);
    expect(statementName(`"${LONGEST}"`, 'job_claim_10')).toBe(long);
    expect(statementName(`"${LONGEST}"`, 'job_claim_11')).not.toBe(long);
  });

  describe('an engine on a schema of 63 characters', () => {
    let db: TestDatabase;
    let baton: Baton | undefined;
    beforeAll(async () => {
      db = await createMigratedDatabase(LONGEST);
    });
    afterAll(async () => {
      await baton?.stop({ drainMs: 2_000 });
      await db?.drop();
    });

    it('runs jobs claimed one at a time and in batches, with retries and completions of many sizes', async () => {
      baton = createBaton({
        connectionString: db.url,
        schema: LONGEST,
        queues: { q: 8 },
        pollIntervalMs: 50,
        backoffBaseMs: 1,
        backoffCapMs: 5,
        handlers: {
          ok: () => 'done',
          flaky: (ctx) => {
            if (ctx.job.attempt === 1) throw new Error('the first attempt fails');
            return 'done';
          },
        },
      });
      await baton.start();
      await baton.enqueue({ jobType: 'ok', queue: 'q' });
      await baton.enqueueMany(Array.from({ length: 60 }, (_, i) => ({ jobType: i % 3 ? 'ok' : 'flaky', queue: 'q', maxAttempts: 5 })));
      await waitFor(
        async () =>
          (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${LONGEST}".jobs WHERE state = 'succeeded'`)).rows[0]!.n === 61,
        { timeoutMs: 20_000, message: 'all 61 jobs to succeed' },
      );
    });
  });
});
