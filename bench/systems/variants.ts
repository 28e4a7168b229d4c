// The configurations under test. Baton: every dispatch mode x claimIntoRunning.
// Peers: each in its best documented configuration for throughput.

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

function baton(dispatch: 'notify' | 'poll', cir: boolean, twin?: 'untraced' | 'delete' | 'fifo'): Variant {
  const v: Variant = {
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
  if (twin === 'untraced') {
    return {
      ...v,
      id: `${v.id}-untraced`,
      label: `${v.label}, tracing off`,
      options: { ...v.options, tracing: false },
      note: `${v.note}; tracing: false (the others run with @opentelemetry/api installed and no SDK, as most applications do)`,
    };
  }
  if (twin === 'delete') {
    return {
      ...v,
      id: `${v.id}-delete`,
      label: `${v.label}, deleteOnSuccess`,
      options: { ...v.options, deleteOnSuccess: true },
      note: `${v.note}; deleteOnSuccess: a succeeded job is deleted by the statement that completes it (only the counters of finished jobs keep it)`,
    };
  }
  if (twin === 'fifo') {
    return {
      ...v,
      id: `${v.id}-fifo`,
      label: `${v.label}, fairness none`,
      options: { ...v.options, fairness: 'none' },
      note: `${v.note}; fairness: 'none': the FIFO claim instead of the default fair claim across tenants`,
    };
  }
  return v;
}

export const BATON_VARIANTS: Variant[] = [baton('notify', true), baton('notify', false), baton('poll', true), baton('poll', false)];

/**
 * Run only when --modes names them, each against its twin in the same run: the cost of tracing
 * (notify-cir-untraced), what deleting succeeded jobs at completion gains (notify-cir-delete), and
 * what the default fair claim costs against the FIFO claim (notify-cir-fifo).
 */
export const BATON_OPT_IN_VARIANTS: Variant[] = [
  baton('notify', true, 'untraced'),
  baton('notify', true, 'delete'),
  baton('notify', true, 'fifo'),
];

/**
 * Each peer in its best documented configuration for a backlog of short jobs, one worker
 * process as for Baton. Versions are whatever is installed (package.json devDependencies) and
 * are recorded in every result file.
 */
export const GRAPHILE_VARIANTS: Variant[] = [
  {
    id: 'graphile-perf',
    system: 'graphile-worker',
    label: 'graphile-worker (performance config)',
    // worker.graphile.org/docs/performance: the configuration its "quick stats" were measured
    // with, handed to run() as preset.worker as is.
    options: {
      concurrentJobs: 24,
      maxPoolSize: 25,
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
    pollIntervalMs: 2_000,
    notify: true,
    note:
      'the configuration of its documented performance figures (worker.graphile.org/docs/performance): 24 concurrent jobs, pool of 25, ' +
      'a local queue of 500 fetched in one batch, completions and failures batched (delay 0); LISTEN/NOTIFY wake-ups, poll every 2 s',
  },
];

export const PGBOSS_VARIANTS: Variant[] = [
  {
    id: 'pgboss-perf',
    system: 'pg-boss',
    label: 'pg-boss (batch 50 x 4 workers, notify, burst)',
    // pgboss.io/api/workers (work(): batchSize, localConcurrency) and the JSDoc of pg-boss 12's
    // types (useListenNotify, the queue's notify, burstWhenBatchFull).
    options: {
      constructor: { useListenNotify: true },
      queue: { notify: true },
      work: { batchSize: 50, localConcurrency: 4, burstWhenBatchFull: true },
    },
    // Its backstop poll while NOTIFY is active (notifyPollingIntervalSeconds, default 30 s).
    pollIntervalMs: 30_000,
    notify: true,
    note:
      'work() with batchSize 50 and localConcurrency 4 (4 polling workers in the process, 50 jobs per fetch); useListenNotify on and the ' +
      "queue's notify on, so an enqueue wakes the workers; burstWhenBatchFull on, so a worker whose fetch came back full fetches again " +
      'at once instead of waiting out its interval',
  },
];

/**
 * The configurations of `npm run bench:ab` (one commit against another): the options every
 * commit since the first release understands, so each runs exactly as a user would run it.
 * 200 slots and a pool of 10 for the drains; 'defaults' sets nothing but the queue's 10 slots.
 */
export const AB_VARIANTS: Variant[] = [
  {
    id: 'ab-notify',
    system: 'baton',
    label: 'notify, 200 slots',
    options: { dispatch: 'notify', claimIntoRunning: true, concurrency: 200, poolSize: BATON_POOL_SIZE },
    pollIntervalMs: BATON_POLL_MS,
    notify: true,
    note: 'LISTEN/NOTIFY wake-ups, claims straight into running, 200 slots, pool of 10',
  },
  {
    id: 'ab-poll',
    system: 'baton',
    label: 'poll, 200 slots',
    options: { dispatch: 'poll', claimIntoRunning: true, concurrency: 200, poolSize: BATON_POOL_SIZE },
    pollIntervalMs: BATON_POLL_MS,
    notify: false,
    note: 'LISTEN off, claims straight into running, 200 slots, pool of 10',
  },
  {
    id: 'ab-defaults',
    system: 'baton',
    label: 'defaults, 10 slots',
    options: { concurrency: 10 },
    pollIntervalMs: BATON_POLL_MS,
    notify: true,
    note: "every option at the library's default; the queue's 10 slots",
  },
];

export const ALL_VARIANTS = [...BATON_VARIANTS, ...BATON_OPT_IN_VARIANTS, ...AB_VARIANTS, ...GRAPHILE_VARIANTS, ...PGBOSS_VARIANTS];

export function variantById(id: string): Variant {
  const v = ALL_VARIANTS.find((x) => x.id === id);
  if (!v) throw new Error(`unknown variant ${id}`);
  return v;
}
