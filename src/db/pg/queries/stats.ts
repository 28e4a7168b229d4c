// The console's snapshot: job counts by queue and state (and how many pending jobs are
// scheduled, not yet due), paused queues, and what finished in the last window (counts, start latencies), in ONE statement, so every panel fed from it
// shows the same moment. Finished jobs are read through jobs_finished_idx (state, finished_at);
// the window's counts stop at STATS_COUNT_CAP and its latencies come from the newest
// STATS_LATENCY_SAMPLE succeeded jobs, so a busy database costs a bounded read per poll. The
// counts by queue and state are job-read.ts's (partial indexes and the succeeded counters), so
// they cost what the live work costs, however much history the table holds.

import { jobReadQueries } from './job-read.ts';

export const STATS_COUNT_CAP = 100_000;
export const STATS_LATENCY_SAMPLE = 1_000;

export function statsQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  // $1: the window in seconds.
  const since = `now() - make_interval(secs => $1::double precision)`;
  const finished = (state: string) =>
    `(SELECT count(*)::int FROM (SELECT 1 FROM ${jobs} WHERE state = '${state}' AND finished_at IS NOT NULL
        AND finished_at > ${since} LIMIT ${STATS_COUNT_CAP}) c)`;
  return {
    snapshot: {
      name: `${schema}.stats_snapshot`,
      text: `WITH counts AS (${jobReadQueries(schema).countsByQueue(false).text}
        ), latency AS (
          SELECT greatest(0, date_part('epoch', started_at - run_at) * 1000) AS ms FROM ${jobs}
          WHERE state = 'succeeded' AND finished_at IS NOT NULL AND finished_at > ${since} AND started_at IS NOT NULL
          ORDER BY finished_at DESC LIMIT ${STATS_LATENCY_SAMPLE}
        )
        SELECT now() AS at,
          (SELECT COALESCE(json_agg(json_build_array(queue, state, n) ORDER BY queue), '[]') FROM counts) AS counts,
          (SELECT COALESCE(json_agg(json_build_array(queue, paused_at) ORDER BY queue), '[]') FROM ${schema}.paused_queues) AS paused,
          -- Pending jobs not yet due, per queue: read through the pending partial index, like the pending count.
          (SELECT COALESCE(json_agg(json_build_array(queue, n) ORDER BY queue), '[]') FROM (
            SELECT queue, count(*)::int AS n FROM ${jobs} WHERE state = 'pending' AND run_at > now() GROUP BY queue) s) AS scheduled,
          ${finished('succeeded')} AS succeeded,
          ${finished('dead_lettered')} AS dead_lettered,
          ${finished('cancelled')} AS cancelled,
          (SELECT count(*)::int FROM latency) AS latency_n,
          (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM latency) AS latency_p50,
          (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) FROM latency) AS latency_p95,
          (SELECT max(ms) FROM latency) AS latency_max`,
    },
  } as const;
}

export type StatsQueries = ReturnType<typeof statsQueries>;
