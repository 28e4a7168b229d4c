// Vitest config for the chaos suite's own unit tests (proxy, checker, cluster
// helper). Kept out of the default `npm test`; run with
// `npx vitest run -c test/chaos/vitest.config.ts`.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/chaos/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
