// Admin reads of the jobs table (listings, capped totals, counts by queue) whose cost follows
// the live work and the page asked for, not the history of finished jobs. A row is in exactly
// one part, each with a partial index (migration 0009): pending (the claim index), a live
// lease (the expiry index) or finished (by tenant other than 'default' (0021), by state for the
// rare states; a queue's through its blocks in finished_blocks (0024), the default tenant's by
// chunks of the primary key).
//
// Each combination of filters is its own statement: the state is part of the text, picked from
// the fixed list of states, and a filter is in the text only when given. So any plan sees which
// partial index matches, where `($1 IS NULL OR state = $1)` would leave it to scan the table.
// Listings and capped counts are sent unnamed, so PostgreSQL plans each with its values: a
// generic plan guesses a tenant's or queue's share of the history from the average one, and
// for a small tenant walks the primary key past everyone else's finished jobs. Planning an
// admin read costs far less than that walk; the counts by queue stay prepared (no such choice).

import { JOB_STATES, type JobState } from '../../../types/job.ts';
import { DEFAULT_TENANT, finishedWindowOf } from '../../../types/job-sort.ts';
import { FINISHED_BLOCK_SHIFT, summaryColumns } from './job-fragments.ts';
import { statementName } from './statement-name.ts';

/** Ids of the primary key one step of a walk reads (see walkIds). */
const WALK_CHUNK = 1_000;

/** The optional filters of a listing, as present or not. */
export interface ListShape {
  state?: JobState | undefined;
  tenantId: boolean;
  /**
   * The tenant filter names a tenant other than 'default'. Only those tenants' finished jobs
   * are in jobs_finished_other_tenant_idx (migration 0021); the statement says so, so its plan
   * may read that index. The default tenant's history is read by walking the primary key.
   */
  otherTenant?: boolean;
  queue: boolean;
  jobType: boolean;
  /**
   * A keyset page: only jobs with an id below a cursor (the last id of the previous page),
   * its parameter after the filters'. Each part starts its read at the cursor, so a deep page
   * costs what the first one does.
   */
  after?: boolean;
}

/**
 * Live leases: the expiry index's rows (jobs_lease_consistent), and finished jobs. Written as a
 * range from -infinity rather than IS NOT NULL (the same rows): without statistics the planner
 * takes IS NOT NULL for nearly every row, and a range for a third, so it still reads the index.
 */
const LEASED = `lease_expires_at > '-infinity' AND state IN ('leased', 'running')`;
const FINISHED = `finished_at > '-infinity'`;
/** The columns a windowed read filters on (see finishedWindow). */
const WINDOW_COLUMNS = 'id, state, tenant_id, queue, job_type, finished_at';

interface Part {
  where: string;
  /** Live parts are read whole through their index and sorted: a few rows however old. */
  live: boolean;
  /** Read by chunks of the primary key, newest first (see partIds). */
  walk?: boolean;
}

/**
 * The parts that hold rows of `state` (all three without one). `viaIndex`: the finished part is
 * read through its tenant or queue index; `walk`: by chunks of the primary key.
 */
function partsOf(state: JobState | undefined, viaIndex: boolean, walk = false): Part[] {
  if (state !== undefined && !JOB_STATES.includes(state)) throw new Error(`unknown job state ${JSON.stringify(state)}`);
  const pending = { where: `state = 'pending'`, live: true };
  // Jobs waiting for their parents (migration 0016), through jobs_waiting_idx.
  const waiting = { where: `state = 'waiting'`, live: true };
  if (state === undefined) {
    return [pending, waiting, { where: LEASED, live: true }, { where: FINISHED, live: false, walk }];
  }
  if (state === 'pending') return [pending];
  if (state === 'waiting') return [waiting];
  if (state === 'leased' || state === 'running') return [{ where: `${LEASED} AND state = '${state}'`, live: true }];
  // Through the tenant or queue index, which holds finished rows only; else by state alone, so
  // that the index of finish times (retention's) is no candidate: reading a state's rows in
  // finish order and sorting them all is what a page of the newest must not do.
  return [{ where: viaIndex ? `${FINISHED} AND state = '${state}'` : `state = '${state}'`, live: false, walk }];
}

/** The filter conditions of a shape and their parameters' order (tenant, queue, job type). */
function filters(shape: ListShape): { conds: string; next: number; window: string | null; queue: string; after: string } {
  const conds: string[] = [];
  let n = 1;
  const tenant = shape.tenantId ? `$${n++}` : '';
  if (shape.tenantId) conds.push(`tenant_id = ${tenant}`);
  if (shape.tenantId && shape.otherTenant) conds.push(`tenant_id <> '${DEFAULT_TENANT}'`);
  const queue = shape.queue ? `$${n++}` : '';
  if (shape.queue) conds.push(`queue = ${queue}`);
  if (shape.jobType) conds.push(`job_type = $${n++}`);
  const after = shape.after ? `$${n++}::bigint` : '';
  if (after) conds.push(`id < ${after}`);
  const window = finishedWindow(shape, tenant, queue);
  return {
    conds: conds.map((c) => ` AND ${c}`).join(''),
    next: n,
    // The window is the newest rows below the cursor, not the newest of the history.
    window: window !== null && after ? `${window} AND id < ${after}` : window,
    queue,
    after,
  };
}

/**
 * The finished jobs a read examines at most (or limit + offset, when more) for the filters its
 * index range does not cover: a job type, a state beside a queue or tenant, a succeeded state
 * alone. Older matches are not found by that read: the history is read a window at a time.
 */
export const LIST_WINDOW_ROWS = 500;

/**
 * The index range of the finished part (newest first) when filters its index does not cover
 * remain, so that the read examines LIST_WINDOW_ROWS of it at most; null when the range is
 * exactly the filters (read as is: it stops at the page) or the part is walked (the default
 * tenant's: exact, chunk by chunk).
 */
function finishedWindow(shape: ListShape, tenant: string, queue: string): string | null {
  const kind = finishedWindowOf({
    state: shape.state,
    tenant: shape.tenantId ? (shape.otherTenant ? 'other' : 'default') : undefined,
    queue: shape.queue,
    jobType: shape.jobType,
  });
  switch (kind) {
    case null:
      return null;
    case 'queue':
      return `${FINISHED} AND queue = ${queue}`;
    case 'tenant':
      return `${FINISHED} AND tenant_id = ${tenant} AND tenant_id <> '${DEFAULT_TENANT}'`;
    case 'dead_lettered':
    case 'cancelled':
      return `state = '${kind}'`;
    case 'finished':
      return FINISHED;
  }
}

/** Whether a finished part is read through its tenant index or its queue's blocks (see partIds). */
const byIndex = (shape: ListShape) => (shape.tenantId && shape.otherTenant === true) || shape.queue;
/** Whether a finished part is the default tenant's, with no index of its own (see partIds). */
const byWalk = (shape: ListShape) => shape.tenantId && shape.otherTenant !== true && !shape.queue;

function shapeKey(shape: ListShape): string {
  return `${shape.state ?? 'all'}_${shape.tenantId ? (shape.otherTenant ? 'o' : 't') : ''}${shape.queue ? 'q' : ''}${shape.jobType ? 'y' : ''}${shape.after ? 'c' : ''}`;
}

export function jobReadQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  const blocks = `${schema}.finished_blocks`;
  const shift = FINISHED_BLOCK_SHIFT;
  const cache = new Map<string, { name?: string; text: string }>();
  const memo = (key: string, build: () => string, prepared: boolean) => {
    let q = cache.get(key);
    if (!q) {
      q = prepared ? { name: statementName(schema, `${key}`), text: build() } : { text: build() };
      cache.set(key, q);
    }
    return q;
  };

  /**
   * The ids of one part matching the filters, newest first, at most `limit`. A live part is read
   * whole through its partial index (MATERIALIZED: no walk of the primary key looking for it)
   * and sorted. A finished part is read newest first: through the queue's blocks when the filter
   * names a queue, through the tenant index backwards when it names a tenant other than
   * 'default', else the primary key backwards or the rare states' index. `queue`: the queue
   * filter's parameter, or '' without one.
   */
  const partIds = (p: Part, conds: string, limit: string, window: string | null, queue: string, after = '') =>
    p.live
      ? `(WITH p AS MATERIALIZED (SELECT id FROM ${jobs} WHERE ${p.where}${conds}) SELECT id FROM p ORDER BY id DESC LIMIT ${limit})`
      : p.walk
        ? walkIds(`${p.where}${conds}`, limit, after)
        : window === null
          ? queue
            ? `(SELECT id FROM ${blockIds(`${p.where}${conds}`, limit, queue, after)} b)`
            : `(SELECT id FROM ${jobs} WHERE ${p.where}${conds} ORDER BY id DESC LIMIT ${limit})`
          : // The window's LIMIT bounds what is read, whatever the filters outside it match.
            `(SELECT id FROM ${windowRows(window, `greatest(${LIST_WINDOW_ROWS}, ${limit})`, queue, after)} w
            WHERE ${p.where}${conds} ORDER BY id DESC LIMIT ${limit})`;
  /** The newest `n` rows of a finished part's window (see finishedWindow), the columns a filter reads. */
  const windowRows = (window: string, n: string, queue: string, after = '') =>
    queue
      ? `(SELECT ${WINDOW_COLUMNS} FROM ${jobs} WHERE id = ANY (ARRAY(SELECT id FROM ${blockIds(window, n, queue, after)} b)))`
      : `(SELECT ${WINDOW_COLUMNS} FROM ${jobs} WHERE ${window} ORDER BY id DESC LIMIT ${n})`;
  /**
   * The newest ids matching `where` (finished jobs of the queue `queue` names), at most `limit`:
   * the queue's blocks in finished_blocks newest first, counting each block's matches through
   * the primary key until `limit` are found, then those blocks' matching ids, each block read
   * by its own subquery (as a join, a plan may read the whole table instead). So a read costs
   * the blocks it needs, not the queue's history; it carries a count, not the ids, from step to
   * step (an array of them would be copied at every step). A block recorded twice is read once
   * (each step takes the next block below the last). `after`: a cursor's parameter, or ''; the
   * walk starts at its block (`where` holds the cursor's test for the rows).
   */
  const blockIds = (where: string, limit: string, queue: string, after = '') => {
    const inBlock = (b: string) => `id >= (${b} << ${shift}) AND id < ((${b} + 1) << ${shift}) AND ${where}`;
    return `(WITH RECURSIVE walk(b, n, seed) AS (
          SELECT (SELECT block FROM ${blocks} WHERE queue = ${queue}${after ? ` AND block <= (${after} >> ${shift})` : ''}
            ORDER BY block DESC LIMIT 1) + 1, 0::bigint, true
          UNION ALL
          SELECT nb.block, w.n + (SELECT count(*) FROM ${jobs} WHERE ${inBlock('nb.block')}), false
          FROM walk w CROSS JOIN LATERAL (
            SELECT block FROM ${blocks} WHERE queue = ${queue} AND block < w.b ORDER BY block DESC LIMIT 1) nb
          WHERE w.n < ${limit})
        SELECT id FROM (SELECT unnest(ARRAY(SELECT id FROM ${jobs} WHERE ${inBlock('w.b')})) AS id FROM walk w WHERE NOT w.seed) j
        ORDER BY id DESC LIMIT ${limit})`;
  };
  /**
   * The newest ids matching `where`, at most `limit`, read WALK_CHUNK ids of the primary key at a
   * time from the newest until enough are found: each chunk is a narrow range of the primary key,
   * which every plan reads through it, where one statement over the whole table is left to the
   * planner's guess of how common the rows are (without statistics it sorted a scan of all of it).
   * `after`: a cursor's parameter, or ''; the walk starts below it.
   */
  const walkIds = (where: string, limit: string, after = '') => `(WITH RECURSIVE walk(hi, ids) AS (
          SELECT ${after ? 'least(' : ''}COALESCE((SELECT id FROM ${jobs} ORDER BY id DESC LIMIT 1), 0) + 1${after ? `, ${after})` : ''}, '{}'::bigint[]
          UNION ALL
          SELECT w.hi - ${WALK_CHUNK}, w.ids || ARRAY(SELECT id FROM ${jobs}
            WHERE id >= w.hi - ${WALK_CHUNK} AND id < w.hi AND ${where} ORDER BY id DESC LIMIT ${limit})
          FROM walk w
          WHERE cardinality(w.ids) < ${limit} AND w.hi > COALESCE((SELECT id FROM ${jobs} ORDER BY id LIMIT 1), 0))
        SELECT unnest(ids) AS id FROM (SELECT ids FROM walk ORDER BY hi LIMIT 1) last LIMIT ${limit})`;

  return {
    /** A page of summaries, newest first. Parameters: the shape's filters (and cursor), then limit, offset. */
    list(shape: ListShape) {
      return memo(
        `job_list_${shapeKey(shape)}`,
        () => {
          const { conds, next, window, queue, after } = filters(shape);
          const [limit, offset] = [`$${next}::int`, `$${next + 1}::int`];
          const ids = partsOf(shape.state, byIndex(shape), byWalk(shape))
            .map((p) => partIds(p, conds, `${limit} + ${offset}`, window, queue, after))
            .join('\n          UNION ALL ');
          // The ids reach the rows as an array, through the primary key: a join could let a plan
          // that guessed many ids merge them with a walk of the whole primary key.
          return `SELECT ${summaryColumns('j')} FROM ${jobs} j
        WHERE j.id = ANY (ARRAY(SELECT id FROM (${ids}) u))
        ORDER BY j.id DESC LIMIT ${limit} OFFSET ${offset}`;
        },
        false,
      );
    },

    /** Rows matching the filters, counted up to a cap. Parameters: the shape's filters, then the cap. */
    countCapped(shape: Omit<ListShape, 'after'>) {
      return memo(
        `job_count_${shapeKey(shape)}`,
        () => {
          const { conds, next, window: listWindow, queue } = filters(shape);
          const cap = `$${next}::int`;
          // The default tenant's count has no walk: it counts within the window too.
          const rare = shape.state === 'dead_lettered' || shape.state === 'cancelled';
          const window = listWindow ?? (byWalk(shape) ? (rare ? `state = '${shape.state}'` : FINISHED) : null);
          const parts = partsOf(shape.state, byIndex(shape))
            .map((p) =>
              p.live
                ? `(SELECT 1 FROM ${jobs} WHERE ${p.where}${conds} LIMIT ${cap})`
                : window === null
                  ? queue
                    ? `(SELECT 1 FROM ${blockIds(`${p.where}${conds}`, cap, queue)} b)`
                    : // Through the tenant index: IS NOT NULL, its predicate itself, so the scan
                      // needs no other column of the row and reads the index alone (an
                      // index-only scan), where the range would fetch every counted row.
                      `(SELECT 1 FROM ${jobs} WHERE ${byIndex(shape) ? p.where.replace(FINISHED, 'finished_at IS NOT NULL') : p.where}${conds} LIMIT ${cap})`
                  : `(SELECT 1 FROM ${windowRows(window, `${LIST_WINDOW_ROWS}`, queue)} w WHERE ${p.where}${conds})`,
            )
            .join('\n          UNION ALL ');
          return `SELECT least(count(*), ${cap})::int AS n FROM (${parts}) c`;
        },
        false,
      );
    },

    /**
     * Counts by queue and state, of one queue ($1) or of all. Pending jobs and live leases are
     * counted through their partial indexes; finished jobs, the history, from finished_counts.
     * A queue appears only with a non-zero count.
     */
    countsByQueue(oneQueue: boolean) {
      return memo(
        `job_counts_by_queue${oneQueue ? '_one' : ''}`,
        () => {
          const q = oneQueue ? ' AND queue = $1' : '';
          return `SELECT queue, state, n FROM (
          SELECT queue, 'pending' AS state, count(*)::float8 AS n FROM ${jobs} WHERE state = 'pending'${q} GROUP BY queue
          UNION ALL
          SELECT queue, 'waiting', count(*)::float8 FROM ${jobs} WHERE state = 'waiting'${q} GROUP BY queue
          UNION ALL
          SELECT queue, state, count(*)::float8 FROM ${jobs} WHERE ${LEASED}${q} GROUP BY queue, state
          UNION ALL
          SELECT queue, state, sum(n)::float8 FROM ${schema}.finished_counts WHERE true${q} GROUP BY queue, state HAVING sum(n) > 0
        ) c ORDER BY queue`;
        },
        true,
      );
    },
  };
}

/** The parameters of a listing's filters, in the order its statement numbers them. */
export function shapeValues(p: { tenantId?: string | undefined; queue?: string | undefined; jobType?: string | undefined }): {
  shape: Omit<ListShape, 'state'>;
  values: string[];
} {
  const values = [p.tenantId, p.queue, p.jobType].filter((v): v is string => v !== undefined);
  return {
    shape: {
      tenantId: p.tenantId !== undefined,
      otherTenant: p.tenantId !== undefined && p.tenantId !== DEFAULT_TENANT,
      queue: p.queue !== undefined,
      jobType: p.jobType !== undefined,
    },
    values,
  };
}

export type JobReadQueries = ReturnType<typeof jobReadQueries>;
