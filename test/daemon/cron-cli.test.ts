// `baton cron list|preview` through bin/baton.js in a child process: preview prints the next
// fire instants in UTC and local time without a database; list prints the schedules of the
// database; a missing subcommand, a bad expression or a fixed-offset zone is a usage error (2).

import { describe, expect, it } from 'vitest';
import { EXIT_CONFIG } from '../../src/daemon/shutdown.ts';
import { createBaton } from '../../src/index.ts';
import { runBaton, waitExit } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();

async function run(args: string[], env: Record<string, string> = {}) {
  const p = runBaton(args, env);
  const code = await waitExit(p, 30_000);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('baton cron', () => {
  it('preview prints the next fire instants in UTC and local time, across a DST change', async () => {
    // No DATABASE_URL: preview needs none (and would otherwise start an embedded server).
    const r = await run(['cron', 'preview', '--cron', '30 1 * * *', '--timezone', 'Europe/London', '--count', '3']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { cron: string; timezone: string; fires: Array<{ utc: string; local: string }> };
    expect(out).toMatchObject({ cron: '30 1 * * *', timezone: 'Europe/London' });
    expect(out.fires).toHaveLength(3);
    for (const f of out.fires) expect(f.local).toMatch(/T0[12]:[03]0:00\+0[01]:00$/);
  });

  it('preview --from starts after a given instant: the fires around the October 2031 change in London', async () => {
    const r = await run([
      'cron',
      'preview',
      '--cron',
      '30 1 * * *',
      '--timezone',
      'Europe/London',
      '--count',
      '2',
      '--from',
      '2031-10-25T12:00:00+01:00',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { fires: unknown[] }).fires).toEqual([
      { utc: '2031-10-26T00:30:00.000Z', local: '2031-10-26T01:30:00+01:00' },
      { utc: '2031-10-27T01:30:00.000Z', local: '2031-10-27T01:30:00+00:00' },
    ]);
  });

  it.each([
    [['cron'], 'baton: cron needs a subcommand'],
    [['cron', 'explode'], 'baton: cron needs a subcommand'],
    [['cron', 'preview', '--cron', '30 1 * * *', '--timezone', 'UTC', '--from', 'yesterday'], '--from: must be an ISO 8601 instant'],
    [['cron', 'preview', '--cron', '30 1 * * *', '--timezone', '+02:00'], 'invalid time zone'],
    [['cron', 'preview', '--cron', '99 * * * *', '--timezone', 'UTC'], 'invalid cron expression'],
    [['cron', 'preview', '--timezone', 'UTC'], '--cron: is required'],
  ])('`baton %j` is a usage error, exit 2', async (args, message) => {
    const r = await run(args, { DATABASE_URL: 'postgres://u@127.0.0.1:1/x' });
    expect(r.code, r.stderr).toBe(EXIT_CONFIG);
    expect(r.stderr).toContain(message);
    expect(r.stderr).not.toContain('baton: baton');
    expect(r.stdout).toBe('');
  });

  it('list prints the schedules in the database', async () => {
    const b = createBaton({ connectionString: db.url, poolSize: 1 });
    try {
      await b.cron.upsert({ name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/London', jobType: 'report', tenantId: 'acme' });
    } finally {
      await b.stop();
    }
    const r = await run(['cron', 'list', '--tenant', 'acme'], { DATABASE_URL: db.url });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { schedules: Array<{ name: string; status: string; nextFireAt: string }> };
    expect(out.schedules.map((s) => [s.name, s.status])).toEqual([['nightly', 'enabled']]);
    expect(typeof out.schedules[0]!.nextFireAt).toBe('string');
  });
});
