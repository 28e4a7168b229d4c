// `npm run test:chaos`: attacks the real engine in child worker processes and a
// private PostgreSQL with a seeded fault schedule, drains, then checks the
// table and the history (checker.ts). Exit code 1 on any violation.
//
//   npm run test:chaos                         T2 smoke: fixed seed 1, then one random seed
//   npm run test:chaos -- --seed 1234          replay one seed
//   npm run test:chaos -- --scenario kill      one fault kind alone (kill|pause|pg-restart|listener|network|blackhole|resets)
//   npm run test:chaos -- --soak               T3: several seeds, thousands of jobs (--seeds, --jobs, --fault-seconds)
//   npm run test:chaos -- --mutate unfenced-complete   must FAIL (token condition stripped from complete)

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createBaton } from '../../src/index.ts';
import { migrate } from '../../src/db/migrate.ts';
import { checkHistory, formatResult, readFinalJobs, type CheckResult } from './checker.ts';
import { Harness } from './harness.ts';
import { readHistory } from './history.ts';
import { writeReports, type RunReport } from './report.ts';
import { FAULT_KINDS, makePlan, type FaultKind, type Plan } from './schedule.ts';

const { values: args } = parseArgs({
  options: {
    seed: { type: 'string' },
    seeds: { type: 'string' },
    soak: { type: 'boolean', default: false },
    scenario: { type: 'string', default: 'mixed' },
    jobs: { type: 'string' },
    'fault-seconds': { type: 'string' },
    mutate: { type: 'string' },
    'no-netns': { type: 'boolean', default: false },
    'no-report': { type: 'boolean', default: false },
  },
});

const scenario = args.scenario as FaultKind | 'mixed';
if (scenario !== 'mixed' && !FAULT_KINDS.includes(scenario)) {
  console.error(`--scenario must be mixed or one of ${FAULT_KINDS.join(', ')}`);
  process.exit(2);
}
const tier = args.soak ? 'soak' : 'smoke';
const DRAIN_DEADLINE_MS = 60_000;

function seedsToRun(): number[] {
  if (args.seed) return [Number(args.seed)];
  const random = () => Math.floor(Math.random() * 2 ** 31);
  const n = Number(args.seeds ?? (args.soak ? 3 : 2));
  // A fixed seed (reproducible in CI) plus random ones (new interleavings each run).
  return [1, ...Array.from({ length: n - 1 }, random)];
}

async function runOne(plan: Plan): Promise<RunReport> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-chaos-${plan.seed}-`));
  console.log(`\n=== chaos ${plan.tier} scenario=${plan.scenario} seed=${plan.seed} jobs=${plan.jobs.length} workers=${plan.workers}x${plan.concurrency} faults=${plan.faults.length} history=${dir}`);
  console.log(`    replay: npm run test:chaos -- --seed ${plan.seed}${plan.scenario === 'mixed' ? '' : ` --scenario ${plan.scenario}`}${plan.tier === 'soak' ? ' --soak' : ''}`);
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
    await migrate(h.admin, { schema: 'baton' });
    await Promise.all(h.slots.map((s) => h.spawnWorker(s)));
    const t0 = Date.now();
    const at = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, t0 + ms - Date.now())));

    // Producer: every job enqueued at its planned time; an error makes the ack indeterminate
    // and the same idempotency key is retried until acknowledged.
    const produce = (async () => {
      for (const j of plan.jobs) {
        await at(j.at);
        for (let attempt = 0; ; attempt++) {
          try {
            const r = await producer.enqueue({
              queue: 'chaos',
              jobType: 'chaos',
              payload: { ms: j.ms, failFirst: j.failFirst },
              idempotencyKey: j.key,
              maxAttempts: 25,
            });
            h.log.append({ type: 'enqueue', key: j.key, status: 'ok', jobId: r.job.id, at: Date.now() });
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
      const slot = planned && f.kind !== 'blackhole' ? await h.busiestSlot(planned) : planned;
      console.log(`    t=${((Date.now() - t0) / 1000).toFixed(1)}s ${f.kind}${slot ? ` ${slot.workerId}` : ''}${f.durationMs ? ` for ${f.durationMs} ms` : ''}`);
      switch (f.kind) {
        case 'kill': return h.kill(slot!);
        case 'pause': return h.pause(slot!, f.durationMs!);
        case 'pg-restart': return h.pgRestart();
        case 'listener': return h.killListeners();
        case 'network': return h.network(f.durationMs!);
        case 'blackhole': return h.blackhole(slot!, f.durationMs!);
        case 'resets': return h.resets(f.durationMs!);
      }
    });
    await Promise.all([produce, ...faults]);
    const healedAt = Date.now();

    // Drain: every acknowledged job terminal, polled against a deadline.
    let drainMs = Number.NaN;
    while (Date.now() - healedAt < DRAIN_DEADLINE_MS) {
      const r = await h.admin
        .query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = 'chaos' AND state NOT IN ('succeeded','dead_lettered','cancelled')`)
        .catch(() => ({ rows: [{ n: -1 }] }));
      if (r.rows[0]?.n === 0) {
        drainMs = Date.now() - healedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await h.stopWorkers();
    await producer.stop();
    const final = await readFinalJobs(h.cluster.url(), 'baton', 'chaos');
    // Kept with the history, so the run can be re-checked offline (checker.ts --final).
    writeFileSync(path.join(dir, 'final.json'), JSON.stringify(final));
    const history = readHistory(...h.logPaths);
    const result: CheckResult = checkHistory(final, history);
    if (Number.isNaN(drainMs)) result.violations.push(`drain: jobs still unfinished ${DRAIN_DEADLINE_MS} ms after the last fault healed`);
    result.ok = result.violations.length === 0;
    const zombieAborts = history.filter((r) => r.type === 'end' && r.outcome === 'aborted').length;
    console.log(formatResult(result));
    console.log(`drain after last heal: ${Number.isNaN(drainMs) ? 'NOT DRAINED' : `${drainMs} ms`}; handlers aborted on lease loss: ${zombieAborts}`);
    return {
      seed: plan.seed,
      tier: plan.tier,
      scenario: plan.scenario,
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
      result,
    };
  } finally {
    await h.teardown();
  }
}

const reports: RunReport[] = [];
for (const seed of seedsToRun()) {
  const plan = makePlan({
    seed,
    tier,
    scenario,
    ...(args.jobs ? { jobs: Number(args.jobs) } : {}),
    ...(args['fault-seconds'] ? { faultSeconds: Number(args['fault-seconds']) } : {}),
  });
  reports.push(await runOne(plan));
}
if (!args['no-report']) {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../results');
  mkdirSync(root, { recursive: true });
  const files = writeReports(root, reports);
  console.log(`\nreports: ${files.join(', ')}`);
}
const failed = reports.filter((r) => !r.result.ok);
console.log(failed.length === 0 ? `\nCHAOS PASSED (${reports.length} run(s))` : `\nCHAOS FAILED: seeds ${failed.map((r) => r.seed).join(', ')}`);
process.exit(failed.length === 0 ? 0 : 1);
