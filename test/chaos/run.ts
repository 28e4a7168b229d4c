// `npm run test:chaos`: attacks the real engine in child worker processes and a
// private PostgreSQL with a seeded fault schedule, drains, then checks the
// table and the history (checker.ts). Exit code 1 on any violation.
//
//   npm run test:chaos                         smoke: a calm run (no faults: nothing may fail by itself), then
//                                              fixed seed 1 and one random seed (300 jobs, 75 s of faults each)
//   npm run test:chaos -- --seed 1234          replay one seed
//   npm run test:chaos -- --scenario kill      one fault kind alone
//                                              (kill|pause|pg-restart|listener|network|blackhole|resets|api-ack|starve),
//                                              or calm: no faults at all,
//                                              or cron: schedules firing every second while the leader is killed and paused,
//                                              or outbox: relays killed mid-publish, NATS resets, a webhook answering 503 and hanging,
//                                              or flow: mixed faults with a key cap and a queue rate limit active,
//                                              or workflow: four-step workflow runs through kill -9, SIGSTOP and a PostgreSQL restart,
//                                              or workflow-parallel: the same with three steps run together, mostly kill -9,
//                                              or debounce: trailing-debounced enqueues over 12 keys while workers are
//                                              killed, producer sessions terminated and PostgreSQL restarted (not in the
//                                              plain smoke: run it alone)
//                                              or leader: the leader SIGSTOPped 30 s twice while schedules fire every 2 s
//                                              and retention deletes each job as it succeeds (not in the plain smoke;
//                                              .ci/run runs it as its own check; writes results/chaos-leader-*)
//                                              or patroni: deploy/ha's etcd + two Patroni nodes (synchronous_mode) + haproxy,
//                                              engines and producers through haproxy, the primary's node crashed, then a
//                                              switchover (not in the plain smoke; skipped, saying so, without patroni,
//                                              etcd or haproxy; writes results/chaos-patroni-*)
//   npm run test:chaos -- --scenario patroni --mutate async   must FAIL (synchronous_mode off: the crash loses acknowledged writes)
//   npm run test:chaos -- --scenario patroni --require        fails instead of skipping when the HA tools are missing (CI)
//   npm run test:chaos -- --scenario calm --mutate notify-timer   must FAIL (the enqueue's query timer left armed)
//   npm run test:chaos -- --soak               soak: 3 seeds x 5,000 jobs x 8 min of faults (--seeds, --jobs, --fault-seconds)
//   npm run test:chaos -- --mutate unfenced-complete   must FAIL (token condition stripped from complete)
//   npm run test:chaos -- --mutate cancel-retry        must FAIL (a failed job retried despite its cancel request)
//
// Every job run also asks about one job in eight to stop (admin.cancel) at a seeded moment:
// before, during or after its handler, through the faults; the checker holds each to one
// terminal state matching what its handler did, and to never running again once cancelled.
//   --no-netns                                 network faults on the Node proxy even as root (said loudly)

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { BatonError, createBaton } from '../../src/index.ts';
import { type CheckResult, checkHistory, formatResult, readFinalJobs } from './checker.ts';
import { type CronRunResult, runCronScenario } from './cron.ts';
import { type DebounceRunResult, runDebounceScenario } from './debounce.ts';
import { checkFlow, type FlowLimits } from './flow-control-checker.ts';
import { Harness } from './harness.ts';
import { errorRecord, readHistory } from './history.ts';
import { type LeaderRunResult, runLeaderScenario } from './leader.ts';
import { type OutboxRunResult, runOutboxScenario } from './outbox.ts';
import { type PatroniRunResult, runPatroniScenario } from './patroni.ts';
import { type RunReport, writeReports } from './report.ts';
import { FAULT_KINDS, type JobPlan, makePlan, type Plan, type Scenario, SMOKE_DEFAULTS, SOAK_DEFAULTS } from './schedule.ts';
import { runWorkflowScenario, type WorkflowRunResult } from './workflow.ts';

const { values: args } = parseArgs({
  options: {
    seed: { type: 'string' },
    seeds: { type: 'string' },
    soak: { type: 'boolean', default: false },
    scenario: { type: 'string' },
    jobs: { type: 'string' },
    'fault-seconds': { type: 'string' },
    mutate: { type: 'string' },
    'no-netns': { type: 'boolean', default: false },
    'no-report': { type: 'boolean', default: false },
    require: { type: 'boolean', default: false },
  },
});

// A named scenario runs alone: cron, outbox, workflow, workflow-parallel, flow, leader, debounce or patroni (each skips the job seeds and the others).
const only = ['cron', 'outbox', 'workflow', 'workflow-parallel', 'flow', 'leader', 'debounce', 'patroni'].includes(args.scenario ?? '')
  ? args.scenario
  : undefined;
const scenario = (only !== undefined ? 'mixed' : (args.scenario ?? 'mixed')) as Scenario;
if (scenario !== 'mixed' && scenario !== 'calm' && !FAULT_KINDS.includes(scenario)) {
  console.error(
    `--scenario must be mixed, calm, cron, outbox, workflow, workflow-parallel, flow, leader, debounce, patroni or one of ${FAULT_KINDS.join(', ')}`,
  );
  process.exit(2);
}
const tier = args.soak ? 'soak' : 'smoke';
// The plain smoke (no scenario, no seed) begins with a calm run: with no fault, nothing may fail.
const withCalm = tier === 'smoke' && args.scenario === undefined && args.seed === undefined;

if (args.mutate === 'notify-timer') {
  // The deliberate bug: the one-round-trip enqueue settles without the callback node-postgres
  // wraps to clear its query timer, which then fires and destroys the producer's connection.
  // The calm run must fail on it.
  type QueryFn = (this: pg.Client, config: { constructor?: { name?: string }; callback?: unknown }, ...rest: unknown[]) => unknown;
  const original = pg.Client.prototype.query as unknown as QueryFn;
  (pg.Client.prototype as unknown as { query: QueryFn }).query = function (config, ...rest) {
    if (config?.constructor?.name !== 'InsertCommitNotify') return original.call(this, config, ...rest);
    const own = config.callback;
    const out = original.call(this, config, ...rest);
    config.callback = own;
    return out;
  };
}
const DRAIN_DEADLINE_MS = 60_000;

function seedsToRun(): number[] {
  if (args.seed) return [Number(args.seed)];
  const random = () => Math.floor(Math.random() * 2 ** 31);
  // A calm run has nothing to vary but job lengths: one seed unless asked for more.
  const n = Number(args.seeds ?? (args.soak ? SOAK_DEFAULTS.seeds : scenario === 'calm' ? 1 : SMOKE_DEFAULTS.seeds));
  // A fixed seed (reproducible in CI) plus random ones (new interleavings each run).
  return [1, ...Array.from({ length: n - 1 }, random)];
}

/**
 * The flow scenario's limits: every other job carries one of four concurrency keys capped at 2
 * ('chaos:*'), and the queue starts at most 10 jobs a second (a bucket of 10).
 */
const FLOW = { cap: 2, rate: { limit: 10, periodMs: 1_000 } };
const flowKey = (i: number) => (i % 2 === 0 ? `chaos:${(i / 2) % 4}` : undefined);

async function runOne(plan: Plan, flow = false): Promise<RunReport> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-chaos-${plan.seed}-`));
  console.log(
    `\n=== chaos ${plan.tier} scenario=${plan.scenario} seed=${plan.seed} jobs=${plan.jobs.length} workers=${plan.workers}x${plan.concurrency} (odd slots generate their worker ids) faults=${plan.faults.length} producer=${plan.producer} history=${dir}`,
  );
  console.log(
    `    replay: npm run test:chaos -- --seed ${plan.seed}${plan.scenario === 'mixed' ? '' : ` --scenario ${plan.scenario}`}${plan.tier === 'soak' ? ' --soak' : ''}`,
  );
  const h = new Harness({
    dir,
    seed: plan.seed,
    workers: plan.workers,
    concurrency: plan.concurrency,
    leaseMs: plan.leaseMs,
    useNetns: !args['no-netns'],
    ...(args.mutate ? { mutate: args.mutate } : {}),
  });
  const started = Date.now();
  try {
    await h.setup();
    const producer = createBaton({ connectionString: h.cluster.url(), queryTimeoutMs: 3_000, poolSize: 2 });
    producer.events.on('error', (e) => h.log.append(errorRecord('producer', e)));
    await migrate(h.admin, { schema: 'baton' });
    if (args.mutate === 'cancel-retry') {
      // The table's own guard would refuse the mutated retry (a row pending with a request): off.
      await h.admin.query('ALTER TABLE baton.jobs DROP CONSTRAINT jobs_cancel_request_not_queued');
    }
    if (flow) {
      await h.admin.query(`INSERT INTO baton.flow_keys (pattern, concurrency_limit) VALUES ('chaos:*', $1)`, [FLOW.cap]);
      await h.admin.query(`INSERT INTO baton.flow_queues (queue, rate_limit, rate_period_ms) VALUES ('chaos', $1, $2)`, [
        FLOW.rate.limit,
        FLOW.rate.periodMs,
      ]);
      console.log(
        `    flow: key cap ${FLOW.cap} on chaos:* (4 keys, every other job), queue rate ${FLOW.rate.limit}/${FLOW.rate.periodMs} ms`,
      );
    }
    const keyOfPlan = new Map(plan.jobs.map((j, i) => [j.key, flow ? flowKey(i) : undefined]));
    const sessionsBefore = await sessionEnds(h.admin);
    await Promise.all(h.slots.map((s) => h.spawnWorker(s)));
    const apiUrl = plan.producer === 'http' ? await h.startApi(producer) : null;
    const t0 = Date.now();
    const at = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, t0 + ms - Date.now())));

    const spec = (j: JobPlan) => ({
      queue: 'chaos',
      jobType: 'chaos',
      payload: { ms: j.ms, failFirst: j.failFirst, ...(j.cancel?.ignore ? { ignoreCancel: true } : {}) },
      idempotencyKey: j.key,
      maxAttempts: 25,
      ...(keyOfPlan.get(j.key) ? { concurrencyKey: keyOfPlan.get(j.key) } : {}),
    });
    // One enqueue attempt: the job id and whether this attempt created it; throws when the
    // outcome is unknown (reset, timeout, 5xx: the insert may have committed); a 4xx is definite.
    const enqueueOnce = async (j: JobPlan): Promise<{ id: string; created: boolean } | { definite: string }> => {
      if (!apiUrl) {
        const r = await producer.enqueue(spec(j));
        return { id: r.job.id, created: r.created };
      }
      const res = await fetch(`${apiUrl}/api/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(spec(j)),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      if (res.status === 200 || res.status === 201)
        return { id: String((JSON.parse(text) as { id: string }).id), created: res.status === 201 };
      if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429)
        return { definite: `${res.status} ${text.slice(0, 200)}` };
      throw new Error(`HTTP ${res.status}`);
    };

    // Acknowledged jobs by key, for the cancels.
    const idOf = new Map<string, string>();
    // Producer: every job enqueued at its planned time; an unknown outcome makes the ack
    // indeterminate and the same idempotency key is retried until acknowledged.
    const produce = (async () => {
      for (const j of plan.jobs) {
        await at(j.at);
        for (let attempt = 0; ; attempt++) {
          try {
            const r = await enqueueOnce(j);
            if ('definite' in r) {
              h.log.append({ type: 'enqueue', key: j.key, status: 'failed', at: Date.now() });
              console.log(`    enqueue ${j.key} refused: ${r.definite}`);
              break;
            }
            idOf.set(j.key, r.id);
            h.log.append({
              type: 'enqueue',
              key: j.key,
              status: 'ok',
              jobId: r.id,
              created: r.created,
              attempt: attempt + 1,
              at: Date.now(),
            });
            break;
          } catch {
            h.log.append({ type: 'enqueue', key: j.key, status: 'indeterminate', at: Date.now() });
            await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
          }
        }
      }
    })();

    const faults = plan.faults.map(async (f) => {
      await at(f.at);
      const planned = f.slot === undefined ? undefined : h.slots[f.slot % h.slots.length]!;
      // Worker faults target the busiest worker, so they hit jobs in flight.
      const slot = planned ? await (f.kind === 'starve' ? h.slotFinishingSoon(planned) : h.busiestSlot(planned)) : planned;
      if (f.kind === 'api-ack' && !apiUrl) return undefined;
      console.log(
        `    t=${((Date.now() - t0) / 1000).toFixed(1)}s ${f.kind}${slot ? ` ${slot.workerId}` : ''}${f.durationMs ? ` for ${f.durationMs} ms` : ''}${f.probability ? ` at p=${f.probability}` : ''}`,
      );
      switch (f.kind) {
        case 'kill':
          return h.kill(slot!);
        case 'pause':
          return h.pause(slot!, f.durationMs!);
        case 'pg-restart':
          return h.pgRestart();
        case 'listener':
          return h.killListeners();
        case 'network':
          return h.network(f.durationMs!);
        case 'blackhole':
          return h.blackhole(slot!, f.durationMs!);
        case 'resets':
          return h.resets(f.durationMs!);
        case 'api-ack':
          return h.apiAck(f.probability!, f.durationMs!);
        case 'starve':
          return h.starve(slot!, f.durationMs!);
      }
    });
    // Cancels: each at its planned time, once its job is acknowledged (its enqueue may still be
    // retrying through a fault), through the library's admin.cancel on the producer's pool.
    const cancels = plan.jobs.flatMap((j) =>
      j.cancel
        ? [
            (async () => {
              await at(j.cancel!.at);
              const ackBy = Date.now() + 30_000;
              while (!idOf.has(j.key) && Date.now() < ackBy) await new Promise((r) => setTimeout(r, 50));
              const id = idOf.get(j.key);
              if (id === undefined) return;
              const sentAt = Date.now();
              try {
                const job = await producer.admin.cancel(id);
                const live = job.state === 'leased' || job.state === 'running';
                const token = live ? job.token : job.state === 'cancelled' ? job.lastToken : null;
                h.log.append({ type: 'cancel', jobId: id, status: live ? 'requested' : 'cancelled', token, sentAt, at: Date.now() });
              } catch (err) {
                const refused = err instanceof BatonError && err.code === 'JOB_STATE_CONFLICT';
                h.log.append({
                  type: 'cancel',
                  jobId: id,
                  status: refused ? 'refused' : 'indeterminate',
                  token: null,
                  sentAt,
                  at: Date.now(),
                });
              }
            })(),
          ]
        : [],
    );
    await Promise.all([produce, ...faults, ...cancels]);
    const healedAt = Date.now();

    // Drain: every acknowledged job terminal, polled against a deadline.
    let drainMs = Number.NaN;
    while (Date.now() - healedAt < DRAIN_DEADLINE_MS) {
      const r = await h.admin
        .query<{ n: number }>(
          `SELECT count(*)::int AS n FROM baton.jobs WHERE queue = 'chaos' AND state NOT IN ('succeeded','dead_lettered','cancelled')`,
        )
        .catch(() => ({ rows: [{ n: -1 }] }));
      if (r.rows[0]?.n === 0) {
        drainMs = Date.now() - healedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const leftover = await h.leftoverRules();
    // Sessions the server saw end without their client's goodbye, before the harness stops anyone.
    const sessionsAfter = await sessionEnds(h.admin);
    const sessions = {
      abandoned: sessionsAfter.abandoned - sessionsBefore.abandoned,
      killed: sessionsAfter.killed - sessionsBefore.killed,
      fatal: sessionsAfter.fatal - sessionsBefore.fatal,
    };
    await h.stopWorkers();
    await producer.stop();
    const final = await readFinalJobs(h.cluster.url(), 'baton', 'chaos');
    // Kept with the history, so the run can be re-checked offline (checker.ts --final).
    writeFileSync(path.join(dir, 'final.json'), JSON.stringify(final));
    const history = readHistory(...h.logPaths);
    const result: CheckResult = checkHistory(final, history, { requireQuiet: plan.scenario === 'calm' });
    if (flow) {
      const keyOf = new Map<string, string>();
      for (const r of history) {
        const k = r.type === 'enqueue' && r.status === 'ok' && r.jobId ? keyOfPlan.get(r.key) : undefined;
        if (k && r.type === 'enqueue') keyOf.set(r.jobId!, k);
      }
      const limits: FlowLimits = { keyOf, leaseMs: plan.leaseMs, ...FLOW };
      const f = checkFlow(history, limits);
      result.violations.push(...f.violations);
      console.log(`flow: peak running per key ${JSON.stringify(f.peaks)} (cap ${FLOW.cap}); most starts in 1 s: ${f.peakStarts}`);
    }
    if (plan.scenario === 'calm' && sessions.abandoned + sessions.killed + sessions.fatal > 0) {
      result.violations.push(
        `not quiet: ${sessions.abandoned} session(s) abandoned by their client, ${sessions.killed} killed, ${sessions.fatal} ended by an error, with no fault`,
      );
    }
    if (Number.isNaN(drainMs)) result.violations.push(`drain: jobs still unfinished ${DRAIN_DEADLINE_MS} ms after the last fault healed`);
    for (const c of h.crashes) result.violations.push(`crash: worker ${c} exited without being killed or stopped`);
    if (leftover && leftover.length > 0)
      result.violations.push(`cleanup: iptables rules left in the namespace after every fault healed: ${leftover.join('; ')}`);
    result.ok = result.violations.length === 0;
    const zombieAborts = history.filter((r) => r.type === 'end' && r.outcome === 'aborted').length;
    const starvation = starvationAborts(history);
    console.log(formatResult(result));
    console.log(
      `drain after last heal: ${Number.isNaN(drainMs) ? 'NOT DRAINED' : `${drainMs} ms`}; handlers aborted on lease loss: ${zombieAborts}`,
    );
    console.log(
      `server sessions ended without their client's goodbye: abandoned ${sessions.abandoned}, killed ${sessions.killed}, fatal ${sessions.fatal}`,
    );
    console.log(
      `network faults: blackhole via ${h.tools.blackhole}, loss via ${h.tools.loss}${h.tools.fallbackReason ? ` (FALLBACK: ${h.tools.fallbackReason})` : ''}`,
    );
    if (starvation.faults > 0) {
      console.log(
        `pool starvation: ${starvation.faults} fault(s) holding ${(h.timings.starveHeldConnections ?? []).join(', ')} pool connection(s); ` +
          `${starvation.aborted} handler(s) aborted inside the window, latest ${starvation.latestAbortMs ?? '-'} ms after it began (heartbeat deadline ${Math.floor(plan.leaseMs * 0.8)} ms)`,
      );
    }
    return {
      seed: plan.seed,
      tier: plan.tier,
      scenario: flow ? 'flow' : plan.scenario,
      workers: plan.workers,
      concurrency: plan.concurrency,
      leaseMs: plan.leaseMs,
      jobsPlanned: plan.jobs.length,
      wallMs: Date.now() - started,
      drainMs,
      zombieAborts,
      timings: h.timings,
      skipped: h.skipped,
      mutate: args.mutate ?? null,
      historyDir: dir,
      netns: h.ns !== null,
      tools: h.tools,
      producer: plan.producer,
      starvation,
      sessions,
      result,
    };
  } finally {
    await h.teardown();
  }
}

/** Per starvation fault: handlers of the starved worker aborted inside its window, and how late. */
function starvationAborts(history: ReturnType<typeof readHistory>): RunReport['starvation'] {
  let faults = 0;
  let aborted = 0;
  let latest: number | null = null;
  for (const f of history) {
    if (f.type !== 'fault' || f.kind !== 'starve' || f.until === undefined) continue;
    faults += 1;
    for (const e of history) {
      if (e.type !== 'end' || e.outcome !== 'aborted' || e.worker !== f.worker || e.at < f.at || e.at > f.until) continue;
      aborted += 1;
      latest = Math.max(latest ?? 0, e.at - f.at);
    }
  }
  return { faults, aborted, latestAbortMs: latest };
}

/** Session ends the server counted in this database: lost clients, terminations, errors (PostgreSQL 14+). */
async function sessionEnds(admin: pg.Pool): Promise<{ abandoned: number; killed: number; fatal: number }> {
  const r = await admin.query<{ abandoned: number; killed: number; fatal: number }>(
    `SELECT sessions_abandoned::int AS abandoned, sessions_killed::int AS killed, sessions_fatal::int AS fatal
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  return r.rows[0]!;
}

const reports: RunReport[] = [];
const cronRuns: CronRunResult[] = [];
if (withCalm) reports.push(await runOne(makePlan({ seed: 1, tier, scenario: 'calm' })));
for (const seed of only !== undefined ? [] : seedsToRun()) {
  const plan = makePlan({
    seed,
    tier,
    scenario,
    ...(args.jobs ? { jobs: Number(args.jobs) } : {}),
    ...(args['fault-seconds'] ? { faultSeconds: Number(args['fault-seconds']) } : {}),
  });
  reports.push(await runOne(plan));
}
// The plain smoke then runs the flow scenario with seed 1, and ends with the cron, outbox and
// workflow scenarios; --scenario NAME runs one of them alone.
if (only === 'flow' || withCalm) {
  const seed = Number(args.seed ?? 1);
  reports.push(await runOne(makePlan({ seed, tier, scenario: 'mixed', ...(args.jobs ? { jobs: Number(args.jobs) } : {}) }), true));
}
if (only === 'cron' || withCalm) {
  cronRuns.push(await runCronScenario({ seed: Number(args.seed ?? 1), useNetns: !args['no-netns'] }));
}
const outboxRuns: OutboxRunResult[] = [];
if (only === 'outbox' || withCalm) outboxRuns.push(await runOutboxScenario({ seed: Number(args.seed ?? 1) }));
const workflowRuns: WorkflowRunResult[] = [];
if (only === 'workflow' || withCalm) {
  workflowRuns.push(await runWorkflowScenario({ seed: Number(args.seed ?? 1), useNetns: !args['no-netns'] }));
}
if (only === 'workflow-parallel' || withCalm) {
  workflowRuns.push(await runWorkflowScenario({ seed: Number(args.seed ?? 1), useNetns: !args['no-netns'], parallel: true }));
}
const leaderRuns: LeaderRunResult[] = [];
if (only === 'leader') {
  leaderRuns.push(await runLeaderScenario({ seed: Number(args.seed ?? 1), useNetns: !args['no-netns'], report: !args['no-report'] }));
}
const debounceRuns: DebounceRunResult[] = [];
if (only === 'debounce') debounceRuns.push(await runDebounceScenario({ seed: Number(args.seed ?? 1), useNetns: !args['no-netns'] }));
const patroniRuns: PatroniRunResult[] = [];
if (only === 'patroni') {
  patroniRuns.push(
    await runPatroniScenario({ report: !args['no-report'], require: args.require, ...(args.mutate ? { mutate: args.mutate } : {}) }),
  );
}
if (!args['no-report'] && reports.length > 0) {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../results');
  mkdirSync(root, { recursive: true });
  const files = writeReports(root, reports);
  console.log(`\nreports: ${files.join(', ')}`);
}
const failed = [
  ...reports.filter((r) => !r.result.ok).map((r) => `seed ${r.seed}`),
  ...cronRuns.filter((r) => !r.ok).map(() => 'cron'),
  ...outboxRuns.filter((r) => !r.ok).map(() => 'outbox'),
  ...workflowRuns.filter((r) => !r.ok).map(() => 'workflow'),
  ...leaderRuns.filter((r) => !r.ok).map(() => 'leader'),
  ...debounceRuns.filter((r) => !r.ok).map(() => 'debounce'),
  ...patroniRuns.filter((r) => !r.ok).map(() => 'patroni'),
];
const skippedPatroni = patroniRuns.filter((r) => r.skipped !== null).length;
const runs =
  reports.length +
  cronRuns.length +
  outboxRuns.length +
  workflowRuns.length +
  leaderRuns.length +
  debounceRuns.length +
  patroniRuns.length -
  skippedPatroni;
console.log(
  failed.length === 0
    ? `\nCHAOS PASSED (${runs} run(s)${skippedPatroni ? ', the patroni scenario SKIPPED' : ''})`
    : `\nCHAOS FAILED: ${failed.join(', ')}`,
);
process.exit(failed.length === 0 ? 0 : 1);
