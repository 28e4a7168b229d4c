// Type-checks the benchmark's peer adapters (bench/systems/graphile.ts, pgboss.ts) against the
// peers in bench/node_modules. Those are installed on their own (npm run bench:install), so a
// checkout without them skips this, saying so; .ci/run installs them.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const missing = ['graphile-worker', 'pg-boss'].filter((p) => !existsSync(`bench/node_modules/${p}/package.json`));
if (missing.length > 0) {
  console.warn(
    `typecheck: skipped bench/systems/graphile.ts and pgboss.ts: ${missing.join(' and ')} not installed (npm run bench:install)`,
  );
  process.exit(0);
}
const r = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'bench/tsconfig.json', '--noEmit'], { stdio: 'inherit' });
process.exit(r.status ?? 1);
