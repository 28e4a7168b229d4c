// `npm run bench`: runs every scenario for Baton's modes and the peers, one system at
// a time on one server, in rounds across systems; verifies every run against the
// database, writes results/.
// Exit code 1 when any run failed verification (the CI smoke test relies on it).

import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseBenchArgs, type Scenario } from './args.ts';
import { machineRecord } from './machine.ts';
import { type MicroResult, microBenchmarks } from './micro.ts';
import { type PgbenchResult, pgbenchCeiling } from './pgbench.ts';
import { Progress } from './progress.ts';
import { renderMarkdown } from './report/markdown.ts';
import { renderSvg } from './report/svg.ts';
import { runMain } from './run-main.ts';
import type { Ctx, Figure } from './scenarios/context.ts';
import { latency } from './scenarios/latency.ts';
import { latencyHttp } from './scenarios/latency-http.ts';
import { recovery } from './scenarios/recovery.ts';
import { interleaved, type Measurement } from './scenarios/summarize.ts';
import { throughput } from './scenarios/throughput.ts';
import { openServer } from './server.ts';
import { type SqlProfileRow, topStatements } from './sql-profile.ts';
import type { Variant } from './systems/types.ts';
import { BATON_OPT_IN_VARIANTS, BATON_VARIANTS, GRAPHILE_VARIANTS, PGBOSS_VARIANTS } from './systems/variants.ts';

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  /** Load averages at the end of the run, next to machine.loadAvgAtStart. */
  loadAvgAtEnd: number[];
  command: string;
  args: Record<string, unknown>;
  machine: Awaited<ReturnType<typeof machineRecord>>;
  variants: Variant[];
  figures: Figure[];
  micro: MicroResult[];
  pgbench: PgbenchResult[];
  missing: string[];
  /** With --profile-sql: the statements that took the most server time. */
  sqlProfile: SqlProfileRow[];
  /** Throughput and latency ran in rounds across systems (absent in reports from before rounds). */
  interleaved?: boolean;
  ok: boolean;
}

async function main(): Promise<number> {
  const args = parseBenchArgs(process.argv.slice(2));
  const progress = new Progress();
  const startedAt = new Date();
  const has = (s: Scenario) => args.scenarios.includes(s);
  const server = await openServer(
    args.server,
    args.profileSql
      ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on' }
      : {},
  );
  let sqlProfile: SqlProfileRow[] = [];
  const missing: string[] = [];
  /** Parts that errored (not just absent): they fail the run like an unverified figure. */
  const broken: string[] = [];
  const figures: Figure[] = [];
  let micro: MicroResult[] = [];
  let pgbench: PgbenchResult[] = [];
  try {
    const machine = await machineRecord(server);
    progress.log(`server: ${machine.postgres.source}; ${machine.postgres.version.split(' ').slice(0, 2).join(' ')}`);
    const ctx: Ctx = { server, args, progress };
    if (args.profileSql) await server.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');

    let batonModes =
      args.modes.length === 0
        ? BATON_VARIANTS
        : [...BATON_VARIANTS, ...BATON_OPT_IN_VARIANTS].filter((v) => args.modes.some((m) => v.id.endsWith(m)));
    if (args.quick && args.modes.length === 0) {
      batonModes = BATON_VARIANTS.filter((v) => v.id === 'baton-notify-cir' || v.id === 'baton-poll-leased');
    }
    const peers: Variant[] = [
      ...(args.peers.includes('graphile') ? GRAPHILE_VARIANTS : []),
      ...(args.peers.includes('pgboss') ? PGBOSS_VARIANTS : []),
    ];
    const record = (f: Figure) => {
      figures.push(f);
      const s = f.summary;
      const main = s.jobsPerSec
        ? `${s.jobsPerSec.median.toFixed(0)} jobs/s`
        : s.p50
          ? `p50 ${s.p50.median.toFixed(2)} ms p99 ${s.p99!.median.toFixed(2)} ms`
          : s.doneMs
            ? `done ${s.doneMs.median.toFixed(0)} ms after kill`
            : '';
      progress.log(
        `${f.status === 'ok' ? 'ok    ' : f.status.toUpperCase().padEnd(6)} ${f.scenario} | ${f.label} | ${main}${f.note ? ` (${f.note})` : ''}${f.status === 'failed' ? ` :: ${f.runs.find((r) => !r.ok)?.detail}` : ''}`,
      );
    };

    // One system at a time, in rounds: each round runs every system once, so the comparisons
    // between systems (the ratios the targets are read from) share the machine's drift.
    const systems = [...batonModes, ...peers];
    const inRounds = async (ms: Measurement[]) => {
      for (const f of await interleaved(args.runs, !args.quick, ms)) record(f);
    };
    if (has('throughput')) {
      await inRounds(systems.map((v) => throughput(ctx, v, 'throughput-small')));
      await inRounds(systems.map((v) => throughput(ctx, v, 'throughput')));
    }
    if (has('latency')) {
      await inRounds(
        systems.map((v) => latency(ctx, v, { rate: args.latencyRate, jobs: args.latencyJobs, via: 'library', scenario: 'latency' })),
      );
      await inRounds(
        systems.map((v) => latency(ctx, v, { rate: args.sparseRate, jobs: args.sparseJobs, via: 'library', scenario: 'latency-sparse' })),
      );
    }
    if (has('recovery')) {
      for (const v of batonModes) {
        record(await recovery(ctx, v, { fastReclaim: true }));
        if (!args.quick) record(await recovery(ctx, v, { fastReclaim: false }));
      }
    }

    if (has('latency-http')) {
      // Through the daemon (`baton serve` as the worker, POST /api/jobs as the producer).
      for (const v of batonModes.filter((x) => x.notify || !args.quick)) {
        record(await latencyHttp(ctx, v, { rate: args.latencyRate, jobs: args.latencyJobs }));
      }
    }
    if (has('micro')) {
      progress.update('micro-benchmarks');
      micro = await microBenchmarks(ctx).catch((err: unknown) => {
        broken.push(`micro-benchmarks failed: ${err instanceof Error ? err.message : String(err)}`);
        return [];
      });
      for (const m of micro) progress.log(`micro  ${m.name}: ${m.opsPerSec.toFixed(0)} ops/s (${m.rowsPerSec.toFixed(0)} rows/s)`);
    }
    if (has('pgbench')) {
      progress.update('pgbench ceiling');
      pgbench = await pgbenchCeiling(ctx).catch((err: unknown) => {
        // No pgbench binary on this machine is a gap to report, not a failure of the harness.
        const absent = (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
        (absent ? missing : broken).push(
          `pgbench ${absent ? 'not installed' : 'failed'}: ${err instanceof Error ? err.message : String(err)}`,
        );
        return [];
      });
      for (const p of pgbench) progress.log(`pgbench ${p.name}: ${p.jobsPerSec.toFixed(0)} jobs/s`);
    }
    if (args.profileSql) sqlProfile = await topStatements(server, 60).catch(() => []);
    progress.done();

    const failed = figures.filter((f) => f.status === 'failed');
    const report: BenchReport = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      loadAvgAtEnd: os.loadavg().map((x) => Math.round(x * 100) / 100),
      command: `npm run bench${args.argv.length ? ` -- ${args.argv.join(' ')}` : ''}`,
      args: { ...args, argv: undefined },
      machine,
      variants: [...batonModes, ...peers],
      figures,
      micro,
      pgbench,
      missing: [...missing, ...broken],
      sqlProfile,
      interleaved: true,
      ok: failed.length === 0 && broken.length === 0 && figures.length + micro.length + pgbench.length > 0,
    };
    const stamp = startedAt.toISOString().slice(0, 16).replace(/[:T]/g, '-');
    await mkdir(args.outDir, { recursive: true });
    const base = path.join(args.outDir, `bench-${stamp}`);
    await writeFile(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(`${base}.svg`, renderSvg(report));
    await writeFile(`${base}.md`, renderMarkdown(report, path.basename(`${base}.svg`)));
    progress.log(`wrote ${base}.json, .md, .svg`);
    for (const m of missing) progress.log(`missing: ${m}`);
    for (const b of broken) progress.log(`FAILED: ${b}`);
    if (failed.length) {
      progress.log(`FAILED: ${failed.length} figure(s) did not verify: ${failed.map((f) => `${f.scenario}/${f.variantId}`).join(', ')}`);
      return 1;
    }
    return report.ok ? 0 : 1;
  } finally {
    await server.close();
  }
}

runMain('bench', main);
