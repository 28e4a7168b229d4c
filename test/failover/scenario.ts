// One primary failover under load, measured: a primary and a streaming standby (synchronous or
// asynchronous replication), worker processes' engines and producers on a multi-host URL, the
// standby promoted and the old primary stopped (immediate) mid-stream; or any other topology
// (runFailoverOn: the chaos tier's Patroni nodes behind haproxy). Counts what was lost,
// whether any token was handed out twice or outcome accepted twice, and how long until jobs
// finished again. Used by test/failover/failover.test.ts and bench/failover.ts; drops its clusters.

import pg from 'pg';
import type { Baton } from '../../src/core/baton.ts';
import { createBaton } from '../../src/create-baton.ts';
import { TIMELINE_TOKEN_STEP } from '../../src/db/pg/queries/job-fragments.ts';
import { startPgCluster, startStandby } from '../helpers/pg-cluster.ts';
import { waitFor } from '../helpers/wait.ts';

export type ReplicationMode = 'sync' | 'async';

export interface FailoverOptions {
  mode: ReplicationMode;
  /** Engines (each with `slots` handler slots on queue q), also the producers. Default 2. */
  engines?: number;
  slots?: number;
  /** Producers enqueueing one job at a time each. Default 4. */
  producers?: number;
  /** Jobs acknowledged before the failover, and after it before producers stop. Default 300 / 200. */
  before?: number;
  after?: number;
  /** How long a handler works (ms). Default 5. */
  handlerMs?: number;
}

export interface FailoverResult {
  mode: ReplicationMode;
  acknowledgedEnqueues: number;
  /** Acknowledged enqueues missing on the new primary. */
  lostEnqueues: number;
  acknowledgedOutcomes: number;
  /** Outcomes acknowledged to a worker that the new primary does not have (the job ran again). */
  lostOutcomes: number;
  /** Tokens handed to two handler runs. */
  reusedTokens: number;
  /** Jobs with two outcomes accepted on one timeline (one of them by a stale lease). */
  staleWritesAccepted: number;
  /** Acknowledged jobs on the new primary not succeeded in the end. */
  unfinished: number;
  /** From the old primary's stop to the first outcome accepted by the new primary (ms). */
  resumeOutcomeMs: number;
  /** From the old primary's stop to the first enqueue acknowledged by the new primary (ms). */
  resumeEnqueueMs: number;
  /** Enqueues that failed (and were retried by the producer) across the failover. */
  enqueueErrors: number;
  /** Engines whose LISTEN and presence sessions were back, on the new primary, within 30 s of the stop. */
  listenersBack: number;
  presenceBack: number;
  /** Whether a leader renewed or took the leader lease on the new primary within 30 s of the stop. */
  leaderBack: boolean;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Where the failover happens: the URL engines and producers use (a multi-host URL, or a proxy's
 * such as haproxy in front of Patroni), how to make the old primary go away, and a URL that
 * reaches the new primary afterwards (for the look-ups).
 */
export interface FailoverTopology {
  url: string;
  /** Makes the failover happen; answers the instant (performance.now()) resumption is timed from. */
  failover(): Promise<number>;
  newPrimaryUrl(): string;
}

export async function runFailover(o: FailoverOptions): Promise<FailoverResult> {
  const primary = await startPgCluster({
    settings: {
      wal_level: 'replica',
      ...(o.mode === 'sync' && { synchronous_standby_names: "'*'", synchronous_commit: 'on' }),
    },
  });
  let standby: Awaited<ReturnType<typeof startStandby>> | undefined;
  try {
    // Promoted, the standby has no standby of its own: it must not wait for one (the copied
    // synchronous_standby_names would hold every commit until an operator attached one).
    standby = await startStandby(primary, { settings: { synchronous_standby_names: "''" } });
    const promoted = standby;
    return await runFailoverOn(o, {
      url: `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=read-write`,
      failover: async () => {
        await promoted.promote();
        await primary.stopImmediate();
        return performance.now();
      },
      newPrimaryUrl: () => promoted.url(),
    });
  } finally {
    await standby?.destroy();
    await primary.destroy();
  }
}

/** Engines and producers on `t.url` under load, `t.failover()` mid-stream, then the counts. */
export async function runFailoverOn(o: FailoverOptions, t: FailoverTopology): Promise<FailoverResult> {
  const engines = o.engines ?? 2;
  const slots = o.slots ?? 8;
  const producers = o.producers ?? 4;
  const before = o.before ?? 300;
  const after = o.after ?? 200;
  const handlerMs = o.handlerMs ?? 5;
  const batons: Baton[] = [];
  try {
    const url = t.url;
    const starts: Array<{ id: string; token: bigint }> = [];
    const outcomes: Array<{ id: string; token: bigint; at: number }> = [];
    const acked: Array<{ id: string; at: number }> = [];
    for (let i = 0; i < engines; i++) {
      const running = new Map<string, bigint>();
      const baton = createBaton({
        connectionString: url,
        queues: { q: slots },
        handlers: {
          work: async (ctx) => {
            starts.push({ id: ctx.job.id, token: BigInt(ctx.token) });
            running.set(ctx.job.id, BigInt(ctx.token));
            await pause(handlerMs);
            return { by: i };
          },
        },
      });
      // The token of this engine's run of each job: its outcome was written under it.
      baton.events.on('succeeded', ({ job }) => {
        const token = running.get(job.id);
        if (token !== undefined) outcomes.push({ id: job.id, token, at: performance.now() });
      });
      batons.push(baton);
    }
    await batons[0]!.migrate();
    await Promise.all(batons.map((b) => b.start()));

    let producing = true;
    let enqueueErrors = 0;
    const produce = async (p: number) => {
      for (let n = 0; producing; n++) {
        try {
          const { job } = await batons[p % engines]!.enqueue({ jobType: 'work', queue: 'q', payload: { p, n } });
          acked.push({ id: job.id, at: performance.now() });
        } catch {
          enqueueErrors++;
          await pause(50); // a producer's own retry pace while no primary answers
        }
      }
    };
    const producerLoops = Array.from({ length: producers }, (_, p) => produce(p));
    await waitFor(() => acked.length >= before && outcomes.length >= before / 2, {
      timeoutMs: 60_000,
      message: `${before} acknowledged enqueues before the failover`,
    });
    const stoppedAt = await t.failover();
    const ackedAtStop = acked.length;
    await waitFor(() => acked.length >= ackedAtStop + after, { timeoutMs: 120_000, message: `${after} enqueues after the failover` });
    producing = false;
    await Promise.all(producerLoops);

    const db = new pg.Pool({ connectionString: t.newPrimaryUrl(), max: 2 });
    try {
      const ids = acked.map((a) => a.id);
      const present = async () =>
        (
          await db.query<{ id: string; state: string; token: string | null }>(
            `SELECT id::text, state, lease_token::text AS token FROM baton.jobs WHERE id = ANY($1::bigint[])`,
            [ids],
          )
        ).rows;
      // Every acknowledged job the new primary has ends succeeded (or the deadline says otherwise).
      await waitFor(async () => (await present()).every((r) => r.state === 'succeeded'), {
        timeoutMs: 120_000,
        message: 'every acknowledged job on the new primary to succeed',
      }).catch(() => undefined);
      const sessions = async (name: string) =>
        Number(
          (await db.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1`, [name])).rows[0]!.n,
        );
      await waitFor(async () => (await sessions('baton-listener')) >= engines && (await sessions('baton-presence')) >= engines, {
        timeoutMs: Math.max(1_000, 30_000 - (performance.now() - stoppedAt)),
        message: 'every engine to LISTEN and hold its presence lock on the new primary',
      }).catch(() => undefined);
      const listenersBack = await sessions('baton-listener');
      const presenceBack = await sessions('baton-presence');
      // A renewal later than the lease as the new primary first showed it happened there.
      const lease = async () =>
        (
          await db.query<{ renewed: string | null; live: boolean }>(
            `SELECT renewed_at::text AS renewed, holder IS NOT NULL AND expires_at > now() AS live FROM baton.leader_lease`,
          )
        ).rows[0]!;
      const firstSeen = (await lease()).renewed;
      const leaderBack = await waitFor(
        async () => {
          const l = await lease();
          return l.live && l.renewed !== null && l.renewed !== firstSeen;
        },
        { timeoutMs: Math.max(1_000, 30_000 - (performance.now() - stoppedAt)), message: 'a leader on the new primary' },
      ).then(
        () => true,
        () => false,
      );
      const rows = await present();
      const byId = new Map(rows.map((r) => [r.id, r]));
      const lostEnqueues = ids.filter((id) => !byId.has(id)).length;
      const unfinished = rows.filter((r) => r.state !== 'succeeded').length;
      const seen = new Set<bigint>();
      let reusedTokens = 0;
      for (const s of starts) {
        if (seen.has(s.token)) reusedTokens++;
        seen.add(s.token);
      }
      const perTimeline = new Map<string, number>();
      for (const out of outcomes) {
        const key = `${out.id}:${out.token / BigInt(TIMELINE_TOKEN_STEP)}`;
        perTimeline.set(key, (perTimeline.get(key) ?? 0) + 1);
      }
      const staleWritesAccepted = [...perTimeline.values()].filter((n) => n > 1).length;
      const lostOutcomes = outcomes.filter((out) => {
        const row = byId.get(out.id);
        return row !== undefined && row.token !== null && BigInt(row.token) !== out.token && out.token < BigInt(TIMELINE_TOKEN_STEP);
      }).length;
      const newTimeline = (t: bigint) => t >= BigInt(TIMELINE_TOKEN_STEP);
      const firstOutcome = outcomes.find((out) => newTimeline(out.token) && out.at >= stoppedAt);
      const firstEnqueue = acked.slice(ackedAtStop).find((a) => a.at >= stoppedAt);
      return {
        mode: o.mode,
        acknowledgedEnqueues: acked.length,
        lostEnqueues,
        acknowledgedOutcomes: outcomes.length,
        lostOutcomes,
        reusedTokens,
        staleWritesAccepted,
        unfinished,
        resumeOutcomeMs: firstOutcome ? Math.round(firstOutcome.at - stoppedAt) : Number.NaN,
        resumeEnqueueMs: firstEnqueue ? Math.round(firstEnqueue.at - stoppedAt) : Number.NaN,
        enqueueErrors,
        listenersBack,
        presenceBack,
        leaderBack,
      };
    } finally {
      await db.end();
    }
  } finally {
    await Promise.all(batons.map((b) => b.stop({ drainMs: 1_000 }).catch(() => undefined)));
  }
}
