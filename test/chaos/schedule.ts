// Fault schedules and workloads, derived from one seed so a run replays from
// it. Two tiers: smoke (run in CI) and soak.

import { prng } from './fault-proxy.ts';

export type FaultKind = 'kill' | 'pause' | 'pg-restart' | 'listener' | 'network' | 'blackhole' | 'resets' | 'api-ack' | 'starve';
/** Kinds drawn from the main PRNG stream (their order is part of every seed's schedule). */
const BASE_KINDS: readonly FaultKind[] = ['kill', 'pause', 'pg-restart', 'listener', 'network', 'blackhole'];
export const FAULT_KINDS: readonly FaultKind[] = [...BASE_KINDS, 'resets', 'api-ack', 'starve'];

/** Soak defaults: 5,000 jobs over 8 minutes of faults, 3 seeds. */
export const SOAK_DEFAULTS = { jobs: 5_000, faultSeconds: 480, seeds: 3 } as const;
/** Smoke defaults: a few hundred jobs, a few minutes on 2 cores with 2 seeds. */
export const SMOKE_DEFAULTS = { jobs: 300, faultSeconds: 75, seeds: 2 } as const;
/**
 * The calm run: the same workload with no fault at all, over several query timeouts of the
 * producer and the workers, so a healthy system that fails requests by itself shows up.
 */
export const CALM_DEFAULTS = { jobs: 300, faultSeconds: 25 } as const;

/** Every scenario: each fault kind alone, all of them mixed, or none at all. */
export type Scenario = FaultKind | 'mixed' | 'calm';

export interface PlannedFault {
  /** ms after the run starts. */
  at: number;
  kind: FaultKind;
  /** Worker slot (0-based) for worker-scoped faults. */
  slot?: number;
  /** How long the fault lasts (pause, network, blackhole, resets, api-ack, starve). */
  durationMs?: number;
  /** api-ack: probability that an HTTP response is reset after the request reached the server. */
  probability?: number;
}

export interface JobPlan {
  key: string;
  /** ms after the run starts. */
  at: number;
  ms: number;
  failFirst: boolean;
  /**
   * A cancel the runner asks for, `at` ms after the run starts (after the job's own time, so it
   * finds the job pending, running or already finished); `ignore`: the handler finishes anyway.
   */
  cancel?: { at: number; ignore: boolean };
}

export interface Plan {
  seed: number;
  tier: 'smoke' | 'soak';
  scenario: Scenario;
  workers: number;
  concurrency: number;
  leaseMs: number;
  /** How producers enqueue: straight into the database, or over the daemon's HTTP API (behind a fault proxy). */
  producer: 'direct' | 'http';
  faults: PlannedFault[];
  jobs: JobPlan[];
  /** When the last fault heals (ms after start). */
  lastHealAt: number;
}

export interface PlanOptions {
  seed: number;
  tier: 'smoke' | 'soak';
  scenario: Scenario;
  jobs?: number;
  /** Length of the fault phase in seconds. */
  faultSeconds?: number;
}

/** Fault counts per tier for the mixed scenario (the soak counts scaled by the fault phase length). */
function mixedCounts(tier: 'smoke' | 'soak', seconds: number): Record<FaultKind, number> {
  if (tier === 'smoke')
    return { kill: 3, pause: 2, 'pg-restart': 1, listener: 2, network: 1, blackhole: 1, resets: 1, 'api-ack': 1, starve: 2 };
  const per8min = { kill: 20, pause: 10, 'pg-restart': 5, listener: 6, network: 4, blackhole: 3, resets: 4, 'api-ack': 1, starve: 4 };
  const f = seconds / 480;
  return Object.fromEntries(Object.entries(per8min).map(([k, n]) => [k, Math.max(1, Math.round(n * f))])) as Record<FaultKind, number>;
}

export function makePlan(o: PlanOptions): Plan {
  const rand = prng(o.seed);
  const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
  const soak = o.tier === 'soak';
  const workers = soak ? 6 : 4;
  const concurrency = 4;
  const leaseMs = 2_000;
  const defaults = o.scenario === 'calm' ? CALM_DEFAULTS : soak ? SOAK_DEFAULTS : SMOKE_DEFAULTS;
  const seconds = o.faultSeconds ?? defaults.faultSeconds;
  const span = seconds * 1_000;
  const nJobs = o.jobs ?? defaults.jobs;

  const single = (kind: FaultKind) => (kind === 'network' || kind === 'api-ack' ? 1 : kind === 'pause' ? 5 : kind === 'starve' ? 4 : 3);
  const none: Record<FaultKind, number> = {
    kill: 0,
    pause: 0,
    'pg-restart': 0,
    listener: 0,
    network: 0,
    blackhole: 0,
    resets: 0,
    'api-ack': 0,
    starve: 0,
  };
  const counts: Record<FaultKind, number> =
    o.scenario === 'mixed' ? mixedCounts(o.tier, seconds) : o.scenario === 'calm' ? none : { ...none, [o.scenario]: single(o.scenario) };
  // The pause scenario wants zombies that wake while the new owner still runs the job, and the starve
  // scenario handlers still running when the pool runs dry: more long jobs.
  const longFrac = o.scenario === 'pause' || o.scenario === 'starve' ? 0.3 : 0.1;

  const faults: PlannedFault[] = [];
  const start = 3_000;
  for (const kind of BASE_KINDS) {
    const n = counts[kind];
    for (let i = 0; i < n; i++) {
      // Spread each kind evenly over the fault phase, jittered inside its slot.
      const slotLen = (span - start) / n;
      const at = Math.round(start + slotLen * i + rand() * slotLen * 0.7);
      const slot = Math.floor(rand() * workers);
      switch (kind) {
        case 'kill':
          faults.push({ at, kind, slot });
          break;
        case 'pause':
          // 1.5-3 x the lease: the zombie must come back to a job someone else owns.
          faults.push({ at, kind, slot, durationMs: Math.round(between(1.5, 3) * leaseMs) });
          break;
        case 'pg-restart':
          faults.push({ at, kind });
          break;
        case 'listener':
          faults.push({ at, kind });
          break;
        case 'network':
          faults.push({ at: o.scenario === 'network' ? start : at, kind, durationMs: soak ? 20_000 : Math.min(30_000, span / 2) });
          break;
        case 'blackhole':
          faults.push({ at, kind, slot, durationMs: soak ? 20_000 : 10_000 });
          break;
      }
    }
  }
  // Reset storms came later: their own PRNG stream, so older seeds keep their schedules.
  const rand2 = prng(o.seed ^ 0x5eed);
  for (let i = 0; i < counts.resets; i++) {
    const slotLen = (span - start) / counts.resets;
    faults.push({
      at: Math.round(start + slotLen * i + rand2() * slotLen * 0.7),
      kind: 'resets',
      durationMs: Math.round(1_000 + rand2() * 2_000),
    });
  }
  // Ambiguous API acks and pool starvation came later still: a third stream, same reason.
  const rand3 = prng(o.seed ^ 0xacc5);
  if (counts['api-ack'] > 0) {
    // One window over the whole enqueue phase: 2% of responses reset in a mixed run,
    // 10% when the scenario runs alone, so a smoke-sized run still sees a few dozen.
    faults.push({ at: 0, kind: 'api-ack', durationMs: Math.round(span * 0.9) + 1_000, probability: o.scenario === 'api-ack' ? 0.1 : 0.02 });
  }
  for (let i = 0; i < counts.starve; i++) {
    const slotLen = (span - start) / counts.starve;
    // Every pool connection held in an idle transaction. Long (10 s, 5 x the lease, longer than the
    // pool's 5 s connection timeout): queued statements time out, the heartbeat deadline must fire.
    // Short (1.75 x the lease, under that timeout): outcome writes queued for a connection before the
    // deadline are sent after the lease expired and the job was re-claimed: only the token fences them.
    faults.push({
      at: Math.round(start + slotLen * i + rand3() * slotLen * 0.5),
      kind: 'starve',
      slot: Math.floor(rand3() * workers),
      durationMs: i % 2 === 0 ? 10_000 : Math.round(1.75 * leaseMs),
    });
  }
  faults.sort((a, b) => a.at - b.at);
  const lastHealAt = Math.max(span, ...faults.map((f) => f.at + (f.durationMs ?? 0)));

  // Jobs arrive over the fault phase: handlers 20-200 ms, 10% of them 1-3 s (30% when testing pauses), 5% fail once.
  const jobs: JobPlan[] = [];
  for (let i = 0; i < nJobs; i++) {
    const long = rand() < longFrac;
    jobs.push({
      key: `job-${o.seed}-${i}`,
      at: Math.round((i / nJobs) * span * 0.9),
      ms: Math.round(long ? between(1_000, 3_000) : between(20, 200)),
      failFirst: rand() < 0.05,
    });
  }
  // Cancels came later: a fourth stream, so older seeds keep their schedules and jobs. About one
  // job in eight (half of those that fail once, which cancels the retry), at a random moment from
  // its enqueue to a little past its handler's length: before, during or after its run.
  const rand4 = prng(o.seed ^ 0xca9c);
  for (const j of jobs) {
    if (rand4() < (j.failFirst ? 0.5 : 0.12)) j.cancel = { at: Math.round(j.at + rand4() * (j.ms + 400)), ignore: rand4() < 0.4 };
  }
  const producer = o.scenario === 'mixed' || o.scenario === 'api-ack' || o.scenario === 'calm' ? 'http' : 'direct';
  return { seed: o.seed, tier: o.tier, scenario: o.scenario, workers, concurrency, leaseMs, producer, faults, jobs, lastHealAt };
}
