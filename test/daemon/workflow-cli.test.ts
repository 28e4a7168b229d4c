// `baton workflow start` through bin/baton.js in a child process, on this file's database: a run
// of a workflow only another process (a worker here) defines is started by name and runs; a
// repeated idempotency key answers the first run; --debounce folds a start into the pending run;
// a name never registered is refused (exit 1) and a missing name, bad input JSON or a bad rule
// is a usage error (exit 2).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CONFIG, EXIT_FAILED } from '../../src/daemon/shutdown.ts';
import { type Baton, createBaton } from '../../src/index.ts';
import { runBaton, waitExit } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
let worker: Baton;

beforeAll(async () => {
  worker = createBaton({ connectionString: db.url, poolSize: 2, queues: { cli: 1 }, pollIntervalMs: 50 });
  worker.workflow<{ n: number }>('cli-double', (ctx) => ctx.step('double', () => ctx.input.n * 2), { queue: 'cli' });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop({ drainMs: 0 });
});

async function run(args: string[]) {
  const p = runBaton(['workflow', ...args], { DATABASE_URL: db.url });
  const code = await waitExit(p, 30_000);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('baton workflow start', () => {
  it('starts a run of a workflow defined only by a worker, which runs it; a repeated key answers the first run', async () => {
    const r = await run(['start', '--name', 'cli-double', '--input', '{"n":21}', '--idempotency-key', 'k-1']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { run: { id: string; name: string }; duplicate: boolean };
    expect(out).toMatchObject({ run: { name: 'cli-double' }, duplicate: false });
    const done = await waitFor(
      async () => {
        const d = await worker.workflows.getRun(out.run.id);
        return d?.state === 'succeeded' ? d : null;
      },
      { message: 'the run to succeed' },
    );
    expect(done.output).toBe(42);
    const again = await run(['start', '--name', 'cli-double', '--idempotency-key', 'k-1']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ run: { id: out.run.id }, duplicate: true });
  });

  it('--debounce folds a second start into the pending run (collapsedBy); a bad rule is a usage error', async () => {
    const rule = JSON.stringify({ key: 'cli:1', windowMs: 600_000 });
    const first = await run(['start', '--name', 'cli-double', '--input', '{"n":1}', '--debounce', rule]);
    expect(first.code, first.stderr).toBe(0);
    const created = JSON.parse(first.stdout) as { run: { id: string }; duplicate: boolean; collapsedBy?: string };
    expect(created.collapsedBy).toBeUndefined();
    const second = await run(['start', '--name', 'cli-double', '--input', '{"n":2}', '--debounce', rule]);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ run: { id: created.run.id }, duplicate: false, collapsedBy: 'debounce' });
    expect((await worker.workflows.getRun(created.run.id))?.input).toEqual({ n: 2 });
    const bad = await run(['start', '--name', 'cli-double', '--debounce', '{"key":"k","windowMs":0}']);
    expect(bad.code).toBe(EXIT_CONFIG);
    expect(bad.stderr).toContain('debounce.windowMs');
    const notJson = await run(['start', '--name', 'cli-double', '--throttle', '{oops']);
    expect(notJson.code).toBe(EXIT_CONFIG);
    expect(notJson.stderr).toContain('--throttle');
  });

  it('refuses a name never registered (exit 1) and bad flags (exit 2), starting nothing', async () => {
    const before = (await db.query('SELECT count(*)::int AS n FROM baton.workflow_runs')).rows[0].n;
    const unknown = await run(['start', '--name', 'cli-dubble']);
    expect(unknown.code).toBe(EXIT_FAILED);
    expect(unknown.stderr).toContain('WORKFLOW_NOT_FOUND');
    const noName = await run(['start']);
    expect(noName.code).toBe(EXIT_CONFIG);
    expect(noName.stderr).toContain('--name');
    const badJson = await run(['start', '--name', 'cli-double', '--input', '{oops']);
    expect(badJson.code).toBe(EXIT_CONFIG);
    expect(badJson.stderr).toContain('--input');
    const noSub = await run(['--name', 'cli-double']);
    expect(noSub.code).toBe(EXIT_CONFIG);
    expect((await db.query('SELECT count(*)::int AS n FROM baton.workflow_runs')).rows[0].n).toBe(before);
  });
});
