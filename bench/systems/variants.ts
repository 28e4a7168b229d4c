// The configurations under test. Baton: every dispatch mode x claimIntoRunning.
// Peers: their documented performance configuration and their defaults.

import type { Variant } from './types.ts';

/**
 * Slots of the one Baton worker process (also the claim batch ceiling). 500 holds about as many
 * jobs per process as graphile-worker's performance configuration (24 running + a local queue
 * of 500 locked). Each claim and each outcome write is one commit, so bigger batches amortise it.
 * BENCH_BATON_CONCURRENCY
 * overrides it for experiments (child processes inherit it; the value is recorded in the results).
 */
export const BATON_CONCURRENCY = Number(process.env.BENCH_BATON_CONCURRENCY ?? 500);
export const BATON_POOL_SIZE = 10;
/** Baton's default poll interval, config.ts POLL_INTERVAL_MS_DEFAULT. */
export const BATON_POLL_MS = 1_000;

function baton(dispatch: 'notify' | 'poll', cir: boolean): Variant {
  return {
    id: `baton-${dispatch}-${cir ? 'cir' : 'leased'}`,
    system: 'baton',
    label: `Baton ${dispatch}, claimIntoRunning ${cir ? 'on' : 'off'}`,
    options: { dispatch, claimIntoRunning: cir, concurrency: BATON_CONCURRENCY, poolSize: BATON_POOL_SIZE },
    pollIntervalMs: BATON_POLL_MS,
    notify: dispatch === 'notify',
    note:
      dispatch === 'poll'
        ? `LISTEN off; claims every pollIntervalMs (default ${BATON_POLL_MS} ms) or when a claim filled every slot`
        : 'LISTEN/NOTIFY wake-ups, leading-edge debounce; poll fallback every 1000 ms',
  };
}

export const BATON_VARIANTS: Variant[] = [
  baton('notify', true),
  baton('notify', false),
  baton('poll', true),
  baton('poll', false),
];

export const GRAPHILE_VARIANTS: Variant[] = [
  {
    id: 'graphile-perf',
    system: 'graphile-worker',
    label: 'graphile-worker (performance config)',
    // worker.graphile.org/docs/performance: the configuration its quick stats were measured with.
    options: {
      concurrency: 24,
      maxPoolSize: 25,
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
    pollIntervalMs: 2_000,
    notify: true,
    note: 'documented performance configuration: concurrency 24, pool 25, localQueue 500, batched complete/fail (delay 0)',
  },
  {
    id: 'graphile-default',
    system: 'graphile-worker',
    label: 'graphile-worker (defaults)',
    options: {},
    pollIntervalMs: 2_000,
    notify: true,
    note: 'defaults: concurrency 1, pool 10, pollInterval 2000 ms, prepared statements on',
  },
];

export const PGBOSS_VARIANTS: Variant[] = [
  {
    id: 'pgboss-default',
    system: 'pg-boss',
    label: 'pg-boss (defaults)',
    options: {},
    pollIntervalMs: 2_000,
    notify: false,
    note: 'defaults: one work() subscription, batchSize 1, pollingIntervalSeconds 2',
  },
  {
    id: 'pgboss-minpoll',
    system: 'pg-boss',
    label: 'pg-boss (0.5 s polling)',
    options: { pollingIntervalSeconds: 0.5 },
    pollIntervalMs: 500,
    notify: false,
    note: 'shortest polling interval pg-boss accepts (0.5 s), batchSize 1',
  },
];

export const ALL_VARIANTS = [...BATON_VARIANTS, ...GRAPHILE_VARIANTS, ...PGBOSS_VARIANTS];

export function variantById(id: string): Variant {
  const v = ALL_VARIANTS.find((x) => x.id === id);
  if (!v) throw new Error(`unknown variant ${id}`);
  return v;
}
