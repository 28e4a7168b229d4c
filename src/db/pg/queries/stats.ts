// The console's snapshot: job counts by queue and state (and how many pending jobs are
// scheduled, not yet due), paused queues, and what finished in the last window (counts, start
// latencies), in ONE statement, so every panel fed from it shows the same moment. The counts by
// queue and state are job-read.ts's (partial indexes and the finished counters), so they cost
// what the live work costs, however much history the table holds.
// The window is read from the newest STATS_SCAN_ROWS ids of the primary key (no index of finish
// times: it cost every completion an entry, migration 0022): the outcomes among them that fell
// in the window, and the start latencies of the newest STATS_LATENCY_SAMPLE of them that
// succeeded. A job created before those rows that finished in the window is not counted (a
// backlog older than STATS_SCAN_ROWS jobs, draining): the window's counts are a lower bound,
// at a bounded cost per poll (docs/http-api.md, Stats).

import { jobReadQueries } from './job-read.ts';
import { statementName } from './statement-name.ts';

/** The newest jobs (by id) the window is read from. */
export const STATS_SCAN_ROWS = 20_000;
export const STATS_LATENCY_SAMPLE = 1_000;

export function statsQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  // $1: the window in seconds.
  const since = `now() - make_interval(secs => $1::double precision)`;
  return {
    snapshot: {
      name: statementName(schema, `stats_snapshot`),
      text: `WITH counts AS (${jobReadQueries(schema).countsByQueue(false).text}
        ), top AS (SELECT max(id) AS id FROM ${jobs}
        ), recent AS MATERIALIZED (
          -- A range of ids with both ends, so every plan (even without statistics) reads it through
          -- the primary key rather than the whole table; ids a purge left as gaps just count as read.
          SELECT state, started_at, run_at, finished_at FROM ${jobs}
          WHERE id > (SELECT id FROM top) - ${STATS_SCAN_ROWS} AND id <= (SELECT id FROM top) AND finished_at > ${since}
        ), tally AS (
          SELECT count(*) FILTER (WHERE state = 'succeeded')::int AS succeeded,
            count(*) FILTER (WHERE state = 'dead_lettered')::int AS dead_lettered,
            count(*) FILTER (WHERE state = 'cancelled')::int AS cancelled FROM recent
        ), latency AS (
          SELECT greatest(0, date_part('epoch', started_at - run_at) * 1000) AS ms FROM recent
          WHERE state = 'succeeded' AND started_at IS NOT NULL
          ORDER BY finished_at DESC LIMIT ${STATS_LATENCY_SAMPLE}
        )
        SELECT now() AS at,
          (SELECT COALESCE(json_agg(json_build_array(queue, state, n) ORDER BY queue), '[]') FROM counts) AS counts,
          (SELECT COALESCE(json_agg(json_build_array(queue, paused_at) ORDER BY queue), '[]') FROM ${schema}.paused_queues) AS paused,
          -- Pending jobs not yet due, per queue: read through the pending partial index, like the pending count.
          (SELECT COALESCE(json_agg(json_build_array(queue, n) ORDER BY queue), '[]') FROM (
            SELECT queue, count(*)::int AS n FROM ${jobs} WHERE state = 'pending' AND run_at > now() GROUP BY queue) s) AS scheduled,
          (SELECT succeeded FROM tally) AS succeeded,
          (SELECT dead_lettered FROM tally) AS dead_lettered,
          (SELECT cancelled FROM tally) AS cancelled,
          (SELECT count(*)::int FROM latency) AS latency_n,
          (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM latency) AS latency_p50,
          (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) FROM latency) AS latency_p95,
          (SELECT max(ms) FROM latency) AS latency_max`,
    },
  } as const;
}

export type StatsQueries = ReturnType<typeof statsQueries>;
