// Checks the paused-leader chaos run (leader.ts) from the history and what is left in the jobs
// table (retention deletes cron jobs once they succeed, so the history of handler starts is the
// record of which jobs existed):
//   - per pause of the leader: another process took over within leaderLeaseMs + renewMs + slack;
//     the paused process's first leadership report after it ran again says it no longer leads,
//     and every leader-only write it made under its old epoch after the takeover changed nothing;
//   - no leader-only write was sent after a takeover to a higher epoch had been answered and
//     still changed something (a deposed leader's late write);
//   - per schedule, every occurrence in the window has at most one job (never fired twice), and
//     every occurrence is fired unless its policy allows a miss (fire_all: never; skip and
//     fire_once: only occurrences nothing reached within the misfire threshold); skip fires
//     nothing later than the threshold; every job ran to success;
//   - retention deleted cron jobs meanwhile (or the run proved nothing about it).

import type { MisfirePolicy } from '../../src/types/schedule.ts';
import type { ExecRecord, HistoryRecord, LeadershipRecord, LeaderWriteRecord } from './history.ts';

export interface LeaderPause {
  /** The paused worker, as the history names it (slot name). */
  worker: string;
  kind: 'external' | 'mid-tick';
  at: number;
  until: number;
}

export interface TableJob {
  id: string;
  key: string;
  state: string;
}

export interface LeaderCheckInput {
  history: HistoryRecord[];
  /** Cron jobs still in the table at the end (retention deleted the others). */
  table: TableJob[];
  /** Misfire policy -> schedule id. */
  schedules: Record<MisfirePolicy, string>;
  periodMs: number;
  /** The first and the last occurrence (ms) the run must account for. */
  from: number;
  to: number;
  thresholdMs: number;
  /** Clock and statement skew allowed around the threshold. */
  marginMs: number;
  pauses: LeaderPause[];
  leaderLeaseMs: number;
  renewMs: number;
  /** Allowed on top of lease + renewal period (statement latency, a loaded machine). */
  takeoverSlackMs: number;
}

export interface PauseResult {
  worker: string;
  kind: LeaderPause['kind'];
  /** ms from the pause to another worker's first 'leadership: true'; NaN if none. */
  takeoverMs: number;
  newLeader: string | null;
  /** The epoch the new leader acquired, and the paused worker's last one before the pause. */
  newEpoch: string | null;
  oldEpoch: string | null;
  /** Leader-only writes the paused worker sent under its old epoch and had answered after the takeover. */
  lateWrites: number;
  /** ms from the pause to the first cron job created afterwards. */
  firstOccurrenceMs: number;
}

export interface LeaderCheck {
  ok: boolean;
  violations: string[];
  pauses: PauseResult[];
  occurrences: number;
  jobs: Record<MisfirePolicy, number>;
  /** Occurrences fire_all's job reached later than the threshold. */
  missed: number;
  /** Cron jobs seen in the history that retention had deleted by the end. */
  purged: number;
  /** Leader-only writes sent under an epoch that had been taken over already (all must have changed nothing). */
  deposedWrites: number;
}

const iso = (ms: number) => new Date(ms).toISOString();
const FENCED: ReadonlySet<LeaderWriteRecord['kind']> = new Set(['fence', 'job-purge', 'outbox-purge', 'worker-prune']);

export function checkLeader(i: LeaderCheckInput): LeaderCheck {
  const violations: string[] = [];
  const leadership = i.history.filter((r): r is LeadershipRecord => r.type === 'leadership').sort((a, b) => a.at - b.at);
  const writes = i.history.filter((r): r is LeaderWriteRecord => r.type === 'leader-write');
  const acquired = writes.filter((w) => w.kind === 'acquire' && w.changed === true && w.epoch !== null).sort((a, b) => a.at - b.at);
  const starts = i.history.filter((r): r is ExecRecord & { key: string } => r.type === 'start' && typeof r.key === 'string');

  // Cron jobs: which ids each occurrence key had, when each was created, and which succeeded.
  const idsByKey = new Map<string, Set<string>>();
  const createdAt = new Map<string, number>();
  for (const s of starts) {
    idsByKey.set(s.key, (idsByKey.get(s.key) ?? new Set()).add(s.jobId));
    if (s.createdAt !== undefined) createdAt.set(s.jobId, s.createdAt);
  }
  for (const t of i.table) idsByKey.set(t.key, (idsByKey.get(t.key) ?? new Set()).add(t.id));
  const ok = new Set(i.history.flatMap((r) => (r.type === 'end' && r.outcome === 'ok' ? [r.jobId] : [])));
  for (const t of i.table) if (t.state === 'succeeded') ok.add(t.id);
  const inTable = new Set(i.table.map((t) => t.id));
  const allIds = new Set([...idsByKey.values()].flatMap((s) => [...s]));
  for (const id of allIds) if (!ok.has(id)) violations.push(`job ${id} never ran to success`);

  // Occurrences, per schedule.
  const occurrences: number[] = [];
  for (let t = Math.ceil(i.from / i.periodMs) * i.periodMs; t <= i.to; t += i.periodMs) occurrences.push(t);
  const jobs = { fire_all: 0, fire_once: 0, skip: 0 } as Record<MisfirePolicy, number>;
  const keyOf = (id: string, t: number) => `cron:${id}:${iso(t)}`;
  for (const [policy, id] of Object.entries(i.schedules) as Array<[MisfirePolicy, string]>) {
    for (const [key, ids] of idsByKey) {
      if (!key.startsWith(`cron:${id}:`)) continue;
      const at = Date.parse(key.slice(`cron:${id}:`.length));
      if (Number.isNaN(at) || at % i.periodMs !== 0) violations.push(`${policy}: job key ${key} is not an occurrence`);
      if (at >= occurrences[0]! && at <= occurrences.at(-1)!) jobs[policy] += ids.size;
      if (ids.size > 1)
        violations.push(`${policy}: occurrence ${key.slice(`cron:${id}:`.length)} fired twice (jobs ${[...ids].join(', ')})`);
    }
  }
  let missed = 0;
  const jobOf = (policy: MisfirePolicy, t: number) => idsByKey.get(keyOf(i.schedules[policy], t));
  for (const t of occurrences) {
    const ref = jobOf('fire_all', t);
    if (!ref || ref.size === 0) {
      violations.push(`fire_all: occurrence ${iso(t)} has no job (lost)`);
      continue;
    }
    const created = Math.min(...[...ref].map((id) => createdAt.get(id) ?? Number.POSITIVE_INFINITY));
    const lateness = created - t;
    if (lateness > i.thresholdMs + i.marginMs) missed++;
    if (lateness <= i.thresholdMs - i.marginMs) {
      for (const policy of ['fire_once', 'skip'] as const) {
        if (!jobOf(policy, t)?.size)
          violations.push(`${policy}: occurrence ${iso(t)} was reached on time (${lateness} ms) but has no job (lost)`);
      }
    }
    for (const j of jobOf('skip', t) ?? []) {
      const late = (createdAt.get(j) ?? t) - t;
      if (late > i.thresholdMs + i.marginMs) violations.push(`skip: occurrence ${iso(t)} fired ${late} ms late, past the threshold`);
    }
  }

  // No write under a deposed epoch changed anything.
  let deposedWrites = 0;
  for (const w of writes) {
    if (!FENCED.has(w.kind) || w.epoch === null) continue;
    const overtaken = acquired.some((a) => BigInt(a.epoch!) > BigInt(w.epoch!) && a.at < w.sentAt);
    if (!overtaken) continue;
    deposedWrites++;
    if (w.changed === true) {
      violations.push(`${w.worker}: a ${w.kind} sent under epoch ${w.epoch} after a takeover changed something (stale leader write)`);
    }
  }

  // Each pause: takeover, the paused worker's state on waking, its late writes.
  const bound = i.leaderLeaseMs + i.renewMs + i.takeoverSlackMs;
  const cronCreated = [...createdAt.values()].sort((a, b) => a - b);
  const pauses: PauseResult[] = i.pauses.map((p) => {
    const took = leadership.find((l) => l.leader && l.worker !== p.worker && l.at >= p.at);
    const takeoverMs = took ? took.at - p.at : Number.NaN;
    if (!took) violations.push(`pause of ${p.worker} at ${iso(p.at)}: no other process took over`);
    else if (takeoverMs > bound) violations.push(`pause of ${p.worker}: takeover took ${takeoverMs} ms (bound ${bound} ms)`);
    const newAcq = took ? acquired.find((a) => a.worker === took.worker && a.at >= p.at) : undefined;
    const oldAcq = [...acquired].reverse().find((a) => a.worker === p.worker && a.at < p.at);
    if (!oldAcq) violations.push(`pause of ${p.worker}: it had acquired no lease before the pause (not the leader?)`);
    const woke = leadership.find((l) => l.worker === p.worker && l.at >= p.until);
    if (!woke) violations.push(`pause of ${p.worker}: no leadership report after it ran again`);
    else if (woke.leader) violations.push(`pause of ${p.worker}: its first leadership report after waking says it leads`);
    const late = writes.filter(
      (w) => w.worker === p.worker && FENCED.has(w.kind) && w.epoch === oldAcq?.epoch && newAcq !== undefined && w.at >= newAcq.at,
    );
    for (const w of late) {
      if (w.changed === true) violations.push(`pause of ${p.worker}: its late ${w.kind} under epoch ${w.epoch} changed something`);
    }
    if (p.kind === 'mid-tick' && !late.some((w) => w.kind === 'fence')) {
      violations.push(`vacuous: ${p.worker}, stopped between reading due schedules and firing them, sent no late fenced transaction`);
    }
    const first = cronCreated.find((c) => c > p.at);
    return {
      worker: p.worker,
      kind: p.kind,
      takeoverMs,
      newLeader: took?.worker ?? null,
      newEpoch: newAcq?.epoch ?? null,
      oldEpoch: oldAcq?.epoch ?? null,
      lateWrites: late.length,
      firstOccurrenceMs: first === undefined ? Number.NaN : first - p.at,
    };
  });

  const purged = [...allIds].filter((id) => !inTable.has(id)).length;
  if (purged === 0) violations.push('vacuous: retention deleted no cron job during the run');
  return { ok: violations.length === 0, violations, pauses, occurrences: occurrences.length, jobs, missed, purged, deposedWrites };
}
