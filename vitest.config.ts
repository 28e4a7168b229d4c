import os from 'node:os';
import { defineConfig } from 'vitest/config';

// How many test files run at once, each in a forked process on a database of its own: one per
// core, at most four. vitest's default (os.availableParallelism() - 1) ran one file at a time on
// a 2-core CI machine, which kept about one core busy. Files are mostly CPU (the test process,
// its child processes and its PostgreSQL sessions), so more files than cores only slow each
// other; four keep the shared server's connections (max_connections 100) in reach.
// VITEST_MAX_WORKERS=n or `npx vitest run --maxWorkers=n` overrides it (docs/testing.md).
const MAX_WORKERS = Math.min(os.availableParallelism(), 4);

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
