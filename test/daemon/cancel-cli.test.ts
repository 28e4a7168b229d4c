// `baton cancel JOB_ID` through bin/baton.js in a child process, on this file's database: a
// pending job is cancelled, a running one gets a cancel request (still running), a finished or
// unknown one is refused (exit 1) and a malformed id is a usage error (exit 2).

import { describe, expect, it } from 'vitest';
import { EXIT_CONFIG, EXIT_FAILED } from '../../src/daemon/shutdown.ts';
import { runBaton, waitExit } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, jobRow } from '../helpers/factory.ts';

const db = useTestDatabase();

async function run(args: string[]) {
  const p = runBaton(['cancel', ...args], { DATABASE_URL: db.url });
  const code = await waitExit(p, 30_000);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('baton cancel', () => {
  it('cancels a pending job, and asks a running one to stop (printing the job as it stands)', async () => {
    const pending = await insertJob(db.pool, {});
    const r1 = await run([pending]);
    expect(r1.code, r1.stderr).toBe(0);
    expect(JSON.parse(r1.stdout)).toMatchObject({ job: { id: pending, state: 'cancelled' }, cancelRequested: false });
    expect((await jobRow(db.pool, pending))!.state).toBe('cancelled');

    const running = await insertJob(db.pool, { state: 'running' });
    const r2 = await run([running]);
    expect(r2.code, r2.stderr).toBe(0);
    expect(JSON.parse(r2.stdout)).toMatchObject({
      job: { id: running, state: 'running', cancelRequestedAt: expect.any(String) },
      cancelRequested: true,
    });
    const row = (await jobRow(db.pool, running))!;
    expect(row.state).toBe('running');
    expect(row.cancel_requested_at).toBeInstanceOf(Date);
  });

  it('refuses a finished or unknown job (exit 1) and a malformed or missing id (exit 2)', async () => {
    const done = await insertJob(db.pool, { state: 'succeeded' });
    const finished = await run([done]);
    expect(finished.code).toBe(EXIT_FAILED);
    expect(finished.stderr).toContain('JOB_STATE_CONFLICT');
    expect((await jobRow(db.pool, done))!.state).toBe('succeeded');
    const unknown = await run(['999999999']);
    expect(unknown.code).toBe(EXIT_FAILED);
    expect(unknown.stderr).toContain('JOB_NOT_FOUND');
    expect((await run(['abc'])).code).toBe(EXIT_CONFIG);
    expect((await run([])).code).toBe(EXIT_CONFIG);
  });
});
