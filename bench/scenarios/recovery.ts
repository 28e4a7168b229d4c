// kill -9 recovery: a worker process holding K in-flight jobs is SIGKILLed; an idle
// second process re-runs them. Reported: kill -> all re-started, kill -> last success,
// next to the configured lease. Verified: every job succeeded on its second attempt.

import pg from 'pg';
import { Child } from '../proc.ts';
import { nowMs } from '../stats.ts';
import { QUEUE, type Variant } from '../systems/types.ts';
import { type Ctx, type Figure, withDatabase } from './context.ts';
import { repeat, summarize } from './summarize.ts';

/** For a failed run's report: state/attempt/owner of every job. */
async function jobStates(url: string): Promise<string> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => undefined);
  try {
    const r = await pool.query<{ s: string }>(
      `select string_agg(format('%s:%s/a%s/%s', id, state, attempt, coalesce(lease_owner, '-')), ' ' order by id) as s from baton.jobs`,
    );
    return r.rows[0]?.s ?? '(none)';
  } finally {
    await pool.end();
  }
}

export const RECOVERY_LEASE_MS = 5_000;
/**
 * The victim's first attempts sleep this long, so they are in flight at the kill. The length
 * never enters a figure (the kill comes first, re-runs do not sleep); --quick (CI on a loaded
 * machine) uses a longer one so a slow rescuer start-up cannot let the victim finish first.
 */
const FIRST_ATTEMPT_SLEEP_MS = 2_000;
const QUICK_FIRST_ATTEMPT_SLEEP_MS = 8_000;

export async function recovery(ctx: Ctx, v: Variant, opts: { fastReclaim: boolean }): Promise<Figure> {
  const k = ctx.args.recoveryJobs;
  const sleepMs = ctx.args.quick ? QUICK_FIRST_ATTEMPT_SLEEP_MS : FIRST_ATTEMPT_SLEEP_MS;
  const scenario = opts.fastReclaim ? 'recovery-fast' : 'recovery-lease';
  const runs = await repeat(ctx.args.runs, !ctx.args.quick, (i, warm) =>
    withDatabase(ctx, `rec_${v.id}`, async (url) => {
      ctx.progress.update(`${scenario} ${v.label}: run ${i + 1}${warm ? ' (warm-up)' : ''}, ${k} in-flight jobs`);
      const victim = new Child('./child/recovery.ts');
      const rescuer = new Child('./child/recovery.ts');
      const common = { variantId: v.id, url, jobs: k, sleepMs, leaseMs: RECOVERY_LEASE_MS, fastReclaim: opts.fastReclaim };
      try {
        await Promise.all([victim.waitFor('booted', 30_000), rescuer.waitFor('booted', 30_000)]);
        rescuer.send({ type: 'run', role: 'rescuer', ...common });
        victim.send({ type: 'run', role: 'victim', ...common });
        await victim.waitFor('enqueued', 30_000);
        let lastStart = 0;
        for (let s = 0; s < k; s++) lastStart = (await victim.waitFor<{ t: number }>('started', 10_000)).t;
        // Every job is in flight on the victim; the rescuer starts idle (nothing pending).
        rescuer.send({ type: 'start' });
        await rescuer.waitFor('ready', 10_000);
        const tKill = nowMs();
        victim.proc.kill('SIGKILL');
        await victim.exited;
        try {
          await rescuer.waitFor('all-succeeded', RECOVERY_LEASE_MS * 3 + 15_000);
        } catch (err) {
          throw new Error(`${(err as Error).message}; jobs then: ${await jobStates(url)}`);
        }
        rescuer.send({ type: 'report' });
        const r = await rescuer.waitFor<{ starts: Array<[number, number, number]>; successes: Array<[number, number]> }>('result', 15_000);
        const problems: string[] = [];
        const pool = new pg.Pool({ connectionString: url, max: 1 });
        // DROP DATABASE ... WITH (FORCE) may reach a client still closing: never crash on it.
        pool.on('error', () => undefined);
        try {
          const rows = (
            await pool.query<{ state: string; attempt: number }>('select state, attempt from baton.jobs where queue = $1', [QUEUE])
          ).rows;
          if (rows.length !== k) problems.push(`${rows.length} rows for ${k} jobs`);
          const notDone = rows.filter((x) => x.state !== 'succeeded').length;
          if (notDone) problems.push(`${notDone} job(s) not succeeded`);
          const wrongAttempt = rows.filter((x) => x.attempt !== 2).length;
          if (wrongAttempt) problems.push(`${wrongAttempt} job(s) not on attempt 2 (the victim must have held them all)`);
        } finally {
          await pool.end();
        }
        const seqs = new Set(r.starts.map((s) => s[0]));
        if (seqs.size !== k || r.starts.length !== k)
          problems.push(`rescuer ran ${r.starts.length} executions of ${seqs.size} distinct jobs, expected ${k}`);
        if (r.successes.length !== k) problems.push(`${r.successes.length} successes recorded by the rescuer`);
        const restart = r.starts.map((s) => s[2] - tKill);
        const done = r.successes.map((s) => s[1] - tKill);
        const ok = problems.length === 0;
        return {
          ok,
          detail: ok ? 'ok' : problems.join('; '),
          values: {
            firstRestartMs: Math.min(...restart),
            restartMs: Math.max(...restart),
            doneMs: Math.max(...done),
            leaseMs: RECOVERY_LEASE_MS,
            killAfterLastStartMs: tKill - lastStart,
          },
        };
      } finally {
        victim.proc.kill('SIGKILL');
        await Promise.all([rescuer.end(), victim.exited]);
      }
    }),
  );
  return summarize({
    scenario,
    variantId: v.id,
    label: v.label,
    params: { jobs: k, leaseMs: RECOVERY_LEASE_MS, fastReclaim: opts.fastReclaim, firstAttemptSleepMs: sleepMs },
    runs,
  });
}
