import { defineConfig } from 'vitest/config';

// How many test files run at once, each in a forked process on a database of its own. One by
// default: with two at once on a 2-core machine the suite took 426 s instead of about 675 s, but
// two workflow tests (test/workflow/parallel.test.ts, step.attempt after a crash, and
// test/workflow/parallel-waits.test.ts, a sleep parked beside an event wait) failed now and then
// under that load, and a flaky test is a bug to fix before the suite runs files side by side.
// VITEST_MAX_WORKERS=n (read here) or `npx vitest run --maxWorkers=n` runs n at once (docs/testing.md).
const MAX_WORKERS = Number(process.env.VITEST_MAX_WORKERS) || 1;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/chaos/**', 'node_modules/**'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: MAX_WORKERS,
  },
});
