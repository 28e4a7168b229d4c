// The Prometheus alert rules shipped in deploy/prometheus: promtool accepts them, and every
// baton_* metric they name is one the daemon exports (a renamed metric fails here, not in
// someone's silent alert). promtool comes with Debian's prometheus package.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/http/metrics.ts';
import { createBaton } from '../../src/index.ts';

const RULES = fileURLToPath(new URL('../../deploy/prometheus/baton-alerts.yml', import.meta.url));
const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
const hasPromtool = promtool.status === 0;
if (!hasPromtool) {
  console.warn(
    `\n${'!'.repeat(100)}\nSKIP promtool check of ${RULES}: promtool is not installed (apt-get install -y prometheus)\n${'!'.repeat(100)}\n`,
  );
}

describe('alert rules', () => {
  const baton = createBaton({ connectionString: 'postgres://127.0.0.1:1/none' });
  afterAll(async () => {
    await baton.stop();
  });

  // Under CI (which installs prometheus) a missing promtool fails here rather than skipping.
  it.skipIf(!hasPromtool && process.env.CI !== 'true')('promtool check rules accepts the file', () => {
    const r = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('names only metrics the daemon exports', () => {
    const metrics = createMetrics(baton, { processMetrics: false });
    try {
      const exported = new Set(metrics.registry.getMetricsAsArray().map((m) => m.name));
      const named = new Set(readFileSync(RULES, 'utf8').match(/\bbaton_[a-z_]+/g));
      expect(named.size).toBeGreaterThan(5);
      expect([...named].filter((n) => !exported.has(n))).toEqual([]);
    } finally {
      metrics.close();
    }
  });
});
