// Writes a chaos run's results: results/chaos-<date>.json (everything) and
// results/chaos-<date>.md (the summary a reader needs: jobs, faults by kind,
// executions, duplicates vs bound, stale writes, lost, drain time).

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CheckResult } from './checker.ts';
import type { NetworkFaultTools } from './harness.ts';

export interface RunReport {
  seed: number;
  tier: 'smoke' | 'soak';
  scenario: string;
  workers: number;
  concurrency: number;
  leaseMs: number;
  jobsPlanned: number;
  wallMs: number;
  drainMs: number;
  zombieAborts: number;
  timings: Record<string, number[]>;
  skipped: string[];
  mutate: string | null;
  historyDir: string;
  netns: boolean;
  /** Which tool each network fault used (iptables in the namespace, or the proxy fallback). */
  tools: NetworkFaultTools;
  producer: 'direct' | 'http';
  /** Pool starvation faults: handlers of the starved worker aborted inside the window, the latest how long after it began. */
  starvation: { faults: number; aborted: number; latestAbortMs: number | null };
  /** Server sessions that ended without their client's goodbye during the run (pg_stat_database). */
  sessions: { abandoned: number; killed: number; fatal: number };
  result: CheckResult;
}

const ms = (xs: number[] | undefined) => (xs?.length ? xs.map((x) => (Number.isNaN(x) ? 'never' : `${Math.round(x)}`)).join(', ') : '-');

function networkLine(t: NetworkFaultTools | undefined): string {
  if (!t) return '';
  if (t.blackhole === 'iptables')
    return "Network faults: iptables DROP rules inside the run's own namespace (blackhole of one worker's source address; 5% random loss both ways); latency and resets from the Node proxy.";
  return `**FALLBACK: no iptables (${t.fallbackReason ?? 'unknown'}).** Blackholes used the Node proxy (bytes swallowed in user space, connections reset on heal), and the network fault had latency but no packet loss.`;
}

export function toMarkdown(reports: RunReport[]): string {
  const sum = (f: (r: CheckResult) => number) => reports.reduce((n, r) => n + f(r.result), 0);
  const faults: Record<string, number> = {};
  for (const r of reports) for (const [k, n] of Object.entries(r.result.faults)) faults[k] = (faults[k] ?? 0) + n;
  const lines = [
    `# Chaos run ${new Date().toISOString()}`,
    '',
    `Tier **${reports[0]?.tier}**, scenario(s) **${[...new Set(reports.map((r) => r.scenario))].join(', ')}**, ${reports.length} run(s), seeds: ${reports.map((r) => r.seed).join(', ')}.` +
      (reports[0]?.mutate ? ` **Mutation: ${reports[0].mutate}** (this run is expected to fail).` : ''),
    `Lease ${reports[0]?.leaseMs} ms; ${reports[0]?.workers} worker processes x concurrency ${reports[0]?.concurrency}; PostgreSQL 15 private cluster${reports[0]?.netns ? ' inside a network namespace' : ' on 127.0.0.1'}; ` +
      `producers enqueue ${reports[0]?.producer === 'http' ? 'over the HTTP API (createApp behind a fault proxy)' : 'straight into the database'}.`,
    networkLine(reports[0]?.tools),
    '',
    `**Totals:** ${sum((r) => r.jobs)} jobs, ${sum((r) => r.lost)} lost, ${sum((r) => r.staleAccepted)} stale writes accepted, ` +
      `${sum((r) => r.duplicateExecutions)} duplicate executions <= bound ${sum((r) => r.duplicateBound)}, ` +
      `${sum((r) => r.deadLettered)} dead-lettered, faults: ${Object.entries(faults)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')}.` +
      (sum((r) => r.ambiguousAcks) > 0
        ? ` Ambiguous acks: ${sum((r) => r.ambiguousAcks)} keys retried after an unknown outcome, ${sum((r) => r.ambiguousCommitted)} of them had committed (the retry found the job); ${sum((r) => r.unexpected) === 0 ? 'each key exactly one job' : '**unexpected jobs: see the violations**'}.`
        : ''),
    '',
    `**Cancels:** ${sum((r) => r.cancels?.requested ?? 0)} requested while running (ended cancelled ${sum((r) => r.cancels?.endedCancelled ?? 0)}, ` +
      `succeeded anyway ${sum((r) => r.cancels?.endedSucceeded ?? 0)}), ${sum((r) => r.cancels?.cancelled ?? 0)} cancelled while pending, ` +
      `${sum((r) => r.cancels?.refused ?? 0)} refused (already finished), ${sum((r) => r.cancels?.unknown ?? 0)} unknown; ` +
      'each job ended in the one terminal state its handler explains, and none started again after its cancel was recorded (or see the violations).',
    '',
    "A calm run has no fault at all: there, any engine error, enqueue with an unknown outcome or session ended without its client's goodbye is a violation. In fault runs the same counts, taken outside every fault's window (widened by 5 s), are reported.",
    '',
    '| scenario | seed | jobs | acked | lost | unexpected | executions | dup jobs | extra execs / bound | stale accepted | writes fenced (outcomes) / unknown | dead | faults | no fault active: errors / unknown enqueues | sessions abandoned / killed / fatal | drain after heal | verdict |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of reports) {
    const c = r.result;
    const s = r.sessions ? `${r.sessions.abandoned} / ${r.sessions.killed} / ${r.sessions.fatal}` : '-';
    lines.push(
      `| ${r.scenario} | ${r.seed} | ${c.jobs} | ${c.acked} | ${c.lost} | ${c.unexpected} | ${c.executions} | ${c.duplicated} (${(c.fractions.duplicated * 100).toFixed(1)}%) | ${c.duplicateExecutions} / ${c.duplicateBound} | ${c.staleAccepted} | ${c.writes.fenced} (${c.writes.fencedOutcomes}) / ${c.writes.unknown} | ${c.deadLettered} | ${
        Object.entries(c.faults)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ') || 'none'
      } | ${c.unexplained.errors} / ${c.unexplained.indeterminate} | ${s} | ${Number.isNaN(r.drainMs) ? 'NOT DRAINED' : `${r.drainMs} ms`} | ${c.ok ? 'valid' : '**INVALID**'} |`,
    );
  }
  lines.push(
    '',
    '| scenario | seed | handlers aborted on lease loss | PG restart (ms) | listeners back after kill (ms) | HTTP responses reset | starvation: aborted / latest after start (ms) | wall time |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const r of reports) {
    const st = r.starvation.faults > 0 ? `${r.starvation.aborted} / ${r.starvation.latestAbortMs ?? '-'}` : '-';
    lines.push(
      `| ${r.scenario} | ${r.seed} | ${r.zombieAborts} | ${ms(r.timings.pgRestartMs)} | ${ms(r.timings.listenerBackMs)} | ${ms(r.timings.apiResponseResets)} | ${st} | ${(r.wallMs / 1000).toFixed(0)} s |`,
    );
  }
  const skipped = [...new Set(reports.flatMap((r) => r.skipped))];
  if (skipped.length) lines.push('', `**Skipped:** ${skipped.join('; ')}`);
  const bad = reports.filter((r) => !r.result.ok);
  if (bad.length) {
    lines.push('', '## Violations');
    for (const r of bad) lines.push('', `${r.scenario}, seed ${r.seed}:`, '', ...r.result.violations.slice(0, 20).map((v) => `- ${v}`));
  }
  lines.push('', 'Replay a seed: `npm run test:chaos -- --seed N` (add `--soak` / `--scenario K` as above).', '');
  return lines.join('\n');
}

/** Writes JSON + Markdown; returns the paths. */
export function writeReports(dir: string, reports: RunReport[]): string[] {
  const stamp = new Date().toISOString().replace(/[:]/g, '-').replace(/\..+/, '');
  const suffix = reports[0]?.tier === 'soak' ? '-soak' : '';
  const base = path.join(dir, `chaos-${stamp}${suffix}`);
  const replacer = (_k: string, v: unknown) => (typeof v === 'number' && Number.isNaN(v) ? null : v);
  writeFileSync(`${base}.json`, `${JSON.stringify({ generatedAt: new Date().toISOString(), runs: reports }, replacer, 2)}\n`);
  writeFileSync(`${base}.md`, toMarkdown(reports));
  return [`${base}.json`, `${base}.md`];
}
