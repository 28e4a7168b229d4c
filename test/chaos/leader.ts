// The paused-leader chaos scenario: three schedules fire every 2 s (fire_all, fire_once, skip)
// while retention deletes each job as soon as it succeeds, and the leader is stopped with SIGSTOP
// for 30 s, twice: once at whatever moment it is in, once (it stops itself, on the harness's
// word) right after its ticker has read the due schedules and before it fires them, so that on
// SIGCONT it sends a late fenced write carrying its old epoch. leader-checker.ts then proves from
// the history and the table that another process took over within about one lease, that no
// occurrence fired twice or was lost, and that the paused process did nothing as leader on
// waking. Writes results/chaos-leader-<time>.{json,md}.

import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CRON_MISFIRE_THRESHOLD_MS_DEFAULT } from '../../src/core/config.ts';
import { LEADER_RENEWALS_PER_LEASE } from '../../src/core/leader-lease.ts';
import { createBaton, type MisfirePolicy } from '../../src/index.ts';
import { Harness, type Slot } from './harness.ts';
import { readHistory } from './history.ts';
import { checkLeader, type LeaderCheck, type LeaderPause } from './leader-checker.ts';

const LEADER_LEASE_MS = 3_000;
const RENEW_MS = LEADER_LEASE_MS / LEADER_RENEWALS_PER_LEASE;
const PAUSE_MS = 30_000;
const PERIOD_MS = 2_000;
/** Before the first pause, between the pauses, and after the second. */
const GAP_MS = 8_000;
const TAKEOVER_SLACK_MS = 1_500;
const MARGIN_MS = 500;
const DRAIN_DEADLINE_MS = 60_000;
const THRESHOLD_MS = CRON_MISFIRE_THRESHOLD_MS_DEFAULT;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface LeaderRunResult {
  ok: boolean;
  check: LeaderCheck;
  violations: string[];
  wallMs: number;
}

export async function runLeaderScenario(o: { seed: number; useNetns: boolean; report: boolean }): Promise<LeaderRunResult> {
  const started = Date.now();
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-chaos-leader-${o.seed}-`));
  console.log(
    `\n=== chaos leader: 3 schedules every ${PERIOD_MS / 1000} s, retention deleting each job as it succeeds, the leader SIGSTOPped ${PAUSE_MS / 1000} s twice (leader lease ${LEADER_LEASE_MS} ms); history=${dir}`,
  );
  // The workers inherit the environment.
  const env = {
    CHAOS_LEADER_LEASE_MS: String(LEADER_LEASE_MS),
    CHAOS_RETENTION_MS: '0',
    CHAOS_RETENTION_INTERVAL_MS: '200',
    CHAOS_CRON_MISFIRE_MS: String(THRESHOLD_MS),
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const h = new Harness({ dir, seed: o.seed, workers: 3, concurrency: 4, leaseMs: 2_000, useNetns: o.useNetns });
  const violations: string[] = [];
  try {
    await h.setup();
    await h.startFleet();
    const producer = createBaton({ connectionString: h.cluster.url(), poolSize: 2 });
    try {
      await h.leaderSlot();
      const ids = {} as Record<MisfirePolicy, string>;
      let from = 0;
      for (const policy of ['fire_all', 'fire_once', 'skip'] as const) {
        const { schedule } = await producer.cron.upsert({
          name: `leader-${policy}`,
          cron: `*/${PERIOD_MS / 1000} * * * * *`,
          timezone: 'UTC',
          jobType: 'chaos',
          queue: 'chaos',
          payload: { ms: 20 },
          misfirePolicy: policy,
          catchUpLimit: 1_000,
        });
        ids[policy] = schedule.id;
        from = Math.max(from, schedule.nextFireAt!.getTime());
      }
      const t0 = Date.now();
      const t = () => `t=${((Date.now() - t0) / 1000).toFixed(1)}s`;
      const pauses: LeaderPause[] = [];

      await sleep(GAP_MS);
      const first = await h.leaderSlot();
      console.log(`    ${t()} SIGSTOP leader ${first.workerId} for ${PAUSE_MS} ms`);
      const firstAt = Date.now();
      const until = await h.pause(first, PAUSE_MS);
      pauses.push({ worker: first.workerId, kind: 'external', at: firstAt, until: until ?? Date.now() });
      console.log(`    ${t()} SIGCONT ${first.workerId}`);

      await sleep(GAP_MS);
      const second = await h.leaderSlot();
      console.log(`    ${t()} leader ${second.workerId}: stop yourself after your next read of due schedules`);
      const p = await pauseAfterDue(h, second, PAUSE_MS);
      pauses.push({ worker: second.workerId, kind: 'mid-tick', ...p });
      console.log(`    ${t()} SIGCONT ${second.workerId} (stopped at t=${((p.at - t0) / 1000).toFixed(1)}s, mid-tick)`);

      await sleep(GAP_MS);
      // Every occurrence up to here was due while a leader ticked; then the schedules stop.
      const to = Date.now() - 1_500;
      for (const id of Object.values(ids)) await producer.cron.pause(id);
      const deadline = Date.now() + DRAIN_DEADLINE_MS;
      while ((await unfinished(h)) > 0) {
        if (Date.now() > deadline) {
          violations.push(`drain: cron jobs unfinished ${DRAIN_DEADLINE_MS} ms after the last pause`);
          break;
        }
        await sleep(100);
      }
      await h.stopWorkers();
      const table = await cronJobs(h);
      const history = readHistory(...h.logPaths);
      const check = checkLeader({
        history,
        table,
        schedules: ids,
        periodMs: PERIOD_MS,
        from,
        to,
        thresholdMs: THRESHOLD_MS,
        marginMs: MARGIN_MS,
        pauses,
        leaderLeaseMs: LEADER_LEASE_MS,
        renewMs: RENEW_MS,
        takeoverSlackMs: TAKEOVER_SLACK_MS,
      });
      violations.push(...check.violations);
      for (const c of h.crashes) violations.push(`crash: worker ${c} exited without being killed or stopped`);
      for (const r of check.pauses) {
        console.log(
          `    pause (${r.kind}) of ${r.worker}: ${r.newLeader ?? 'nobody'} took over after ${r.takeoverMs} ms (bound ${LEADER_LEASE_MS + RENEW_MS + TAKEOVER_SLACK_MS} ms), epoch ${r.oldEpoch} -> ${r.newEpoch}; next occurrence job ${r.firstOccurrenceMs} ms after the pause; late leader writes of the paused process: ${r.lateWrites}, none changed anything`,
        );
      }
      console.log(
        `    occurrences in the window: ${check.occurrences}; jobs: fire_all ${check.jobs.fire_all}, fire_once ${check.jobs.fire_once}, skip ${check.jobs.skip}; missed (later than ${THRESHOLD_MS} ms): ${check.missed}; cron jobs deleted by retention meanwhile: ${check.purged}; writes under a deposed epoch: ${check.deposedWrites}, none changed anything`,
      );
      for (const v of violations) console.log(`    VIOLATION ${v}`);
      console.log(violations.length === 0 ? '    leader: VALID' : `    leader: INVALID (${violations.length})`);
      const result = { ok: violations.length === 0, check, violations, wallMs: Date.now() - started };
      if (o.report) {
        const files = writeLeaderReport(result, { dir, seed: o.seed, netns: h.ns !== null });
        console.log(`    report: ${files.join(', ')}`);
      }
      return result;
    } finally {
      await h.stopWorkers().catch(() => undefined);
      await producer.stop();
    }
  } finally {
    await h.teardown();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * Asks the slot's worker to SIGSTOP itself right after its next read of due schedules, waits for
 * its word that it is stopping, keeps it stopped for `ms`, then SIGCONTs it.
 */
async function pauseAfterDue(h: Harness, slot: Slot, ms: number): Promise<{ at: number; until: number }> {
  const child = slot.child as ChildProcess;
  const stopping = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${slot.workerId} did not stop itself within 10 s`)), 10_000);
    const onMessage = (m: { type?: string; at?: number }) => {
      if (m?.type !== 'self-stopping') return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(m.at ?? Date.now());
    };
    child.on('message', onMessage);
  });
  child.send({ type: 'pause-after-due' });
  const at = await stopping;
  const inFlight = await h.inFlight(slot.leaseOwner);
  await sleep(Math.max(0, at + ms - Date.now()));
  // Read before the signal: the process may run, and report its leadership, before kill returns.
  const until = Date.now();
  child.kill('SIGCONT');
  h.log.append({ type: 'fault', kind: 'pause', worker: slot.workerId, at, until, inFlight });
  return { at, until };
}

async function unfinished(h: Harness): Promise<number> {
  const r = await h.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM baton.jobs WHERE idempotency_key LIKE 'cron:%' AND state NOT IN ('succeeded','dead_lettered','cancelled')`,
  );
  return r.rows[0]!.n;
}

async function cronJobs(h: Harness): Promise<Array<{ id: string; key: string; state: string }>> {
  const r = await h.admin.query<{ id: string; key: string; state: string }>(
    `SELECT id::text, idempotency_key AS key, state FROM baton.jobs WHERE idempotency_key LIKE 'cron:%'`,
  );
  return r.rows;
}

const count = (violations: string[], what: string) => violations.filter((v) => v.includes(what)).length;

function writeLeaderReport(r: LeaderRunResult, meta: { dir: string; seed: number; netns: boolean }): string[] {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../results');
  mkdirSync(root, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // not a checkout
  }
  const base = path.join(root, `chaos-leader-${stamp}`);
  const settings = {
    leaderLeaseMs: LEADER_LEASE_MS,
    renewMs: RENEW_MS,
    takeoverBoundMs: LEADER_LEASE_MS + RENEW_MS + TAKEOVER_SLACK_MS,
    pauseMs: PAUSE_MS,
    periodMs: PERIOD_MS,
    misfireThresholdMs: THRESHOLD_MS,
    retention: 'succeeded jobs deleted at once (succeededMs 0, every 200 ms)',
    workers: 3,
  };
  writeFileSync(
    `${base}.json`,
    `${JSON.stringify({ at: new Date().toISOString(), commit, seed: meta.seed, netns: meta.netns, settings, historyDir: meta.dir, ...r }, null, 2)}\n`,
  );
  const c = r.check;
  const lines = [
    `# Chaos run: a paused leader, ${new Date().toISOString()}`,
    '',
    `\`npm run test:chaos -- --scenario leader\` at \`${commit}\`. Three worker processes (queue \`chaos\`, concurrency 4) on a private PostgreSQL 15 cluster${meta.netns ? ' inside a network namespace' : ''}; leader lease ${LEADER_LEASE_MS} ms (renewed every ${RENEW_MS} ms; the holder acts for ${0.8 * LEADER_LEASE_MS} ms after its last renewal). Three schedules fire every ${PERIOD_MS / 1000} s (fire_all, fire_once, skip; misfire threshold ${THRESHOLD_MS} ms) while retention deletes every succeeded job at once. The leader is stopped with SIGSTOP for ${PAUSE_MS / 1000} s twice: once at whatever moment it is in, once right after its ticker read the due schedules and before it fired them.`,
    '',
    '| pause | stopped | taken over by | takeover (ms) | bound (ms) | epoch | next occurrence job after the pause (ms) | late leader writes of the paused process (changed nothing) |',
    '|---|---|---|---|---|---|---|---|',
    ...c.pauses.map(
      (p) =>
        `| ${p.kind} | ${p.worker} | ${p.newLeader ?? '-'} | ${Number.isNaN(p.takeoverMs) ? 'never' : p.takeoverMs} | ${settings.takeoverBoundMs} | ${p.oldEpoch} -> ${p.newEpoch} | ${Number.isNaN(p.firstOccurrenceMs) ? '-' : p.firstOccurrenceMs} | ${p.lateWrites} |`,
    ),
    '',
    `Occurrences in the window: ${c.occurrences} per schedule; jobs: fire_all ${c.jobs.fire_all}, fire_once ${c.jobs.fire_once}, skip ${c.jobs.skip}. Occurrences fired twice: ${count(r.violations, 'fired twice')}; lost: ${count(r.violations, 'lost')} (reached later than the misfire threshold: ${c.missed}). Cron jobs deleted by retention during the run: ${c.purged}. Leader-only writes sent under an epoch already taken over: ${c.deposedWrites}, of which changed something: ${count(r.violations, 'stale leader write')}.`,
    '',
    `**Verdict: ${r.ok ? 'VALID' : 'INVALID'}** (wall time ${Math.round(r.wallMs / 1000)} s).`,
    ...(r.violations.length ? ['', '## Violations', '', ...r.violations.map((v) => `- ${v}`)] : []),
    '',
  ];
  writeFileSync(`${base}.md`, lines.join('\n'));
  return [`${base}.json`, `${base}.md`];
}
