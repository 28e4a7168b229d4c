// The headline of a run: what ran (each system's version and configuration), where (the
// machine and the PostgreSQL server with its settings), and one row per system. Shared by
// the results file's Markdown and the generated block of docs/benchmarks.md.

import type { BenchReport } from '../main.ts';
import type { Figure } from '../scenarios/context.ts';
import type { Variant } from '../systems/types.ts';
import { spreadText } from './format.ts';

export function fig(r: BenchReport, sc: string, id: string): Figure | undefined {
  return r.figures.find((x) => x.scenario === sc && x.variantId === id);
}

export function cell(f: Figure | undefined, key: string, digits?: number): string {
  if (!f) return '—';
  if (f.status === 'failed') return '**failed**';
  // JSON has no Infinity: a latency of a job that never started comes back as null.
  if (f.summary[key]?.median == null && f.note?.startsWith('could not keep up')) return 'did not keep up';
  return spreadText(f.summary[key], digits);
}

/** "graphile-worker 0.18.0", "Baton 0.1.0 at 1a2b3c4d5e". */
export function versionOf(r: BenchReport, v: Variant): string {
  const version = r.machine.systems?.[v.system] ?? 'version not recorded';
  const commit = r.machine.batonBuild?.commit ?? r.machine.gitCommit;
  return v.system === 'baton' ? `Baton ${version} at ${commit.slice(0, 10)}` : `${v.system} ${version}`;
}

/** One bullet per configuration: version, why this configuration, the options handed over. */
export function configurationLines(r: BenchReport): string[] {
  return r.variants.map((v) => `- **${v.label}** (\`${v.id}\`), ${versionOf(r, v)}: ${v.note}. Options: \`${JSON.stringify(v.options)}\``);
}

/** Whether a load average at start or end exceeded the core count (other work then competed for the CPU). */
function loadAboveCores(r: BenchReport): boolean {
  return Math.max(...(r.machine.loadAvgAtStart ?? []), ...(r.loadAvgAtEnd ?? [])) > r.machine.cores;
}

/** The machine and the server, as bullets. */
export function machineLines(r: BenchReport): string[] {
  const m = r.machine;
  const tuned = Object.entries(m.postgres.tuned ?? {});
  return [
    `- CPU: ${m.cpuModel}, ${m.cores} cores; memory ${m.memoryGiB} GiB; ${m.os}; Node ${m.node}`,
    `- Load average (1/5/15 min) at start ${m.loadAvgAtStart?.join(' / ') ?? 'n/a'}, at end ${r.loadAvgAtEnd?.join(' / ') ?? 'n/a'}${loadAboveCores(r) ? ' (above the core count: other work competed for the CPU)' : ''}`,
    `- Commit ${m.gitCommit}${m.gitDirty ? ' (working tree had uncommitted changes)' : ''}`,
    ...(m.batonBuild
      ? [
          `- Baton under test: the build of ${m.batonBuild.commit} (\`BENCH_BATON_LIB=${m.batonBuild.entry}\`); the commit above is the harness's`,
        ]
      : []),
    `- Server: ${m.postgres.version.split(' ').slice(0, 2).join(' ')}, ${m.postgres.source}, on the same host as the benchmark`,
    `- Server settings set by the bench: ${tuned.length ? `${tuned.map(([k, v]) => `${k}=${v}`).join(', ')}; durability, autovacuum and everything else at PostgreSQL's defaults` : 'none (a given server, as it was)'}`,
    `- Settings in force: ${Object.entries(m.postgres.settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
  ];
}

/** One row per system and mode: throughput and start latency, median (min–max) of the counted runs. */
export function summaryTable(r: BenchReport, out: string[]): void {
  if (!r.figures.some((f) => f.scenario.startsWith('throughput') || f.scenario.startsWith('latency'))) return;
  const small = r.figures.find((x) => x.scenario === 'throughput-small');
  const tp = r.figures.find((x) => x.scenario === 'throughput');
  const jobs = (f: Figure | undefined) => (f ? Number(f.params.jobs).toLocaleString('en-US') : '?');
  out.push(
    `| System / mode | version | drain of ${jobs(small)} (jobs/s) | drain of ${jobs(tp)} (jobs/s) | latency p50 (ms) | latency p99 (ms) | sparse p50 (ms) | sparse p99 (ms) | wake-up |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---|',
  );
  for (const v of r.variants) {
    out.push(
      `| ${v.label} | ${versionOf(r, v)} | ${cell(fig(r, 'throughput-small', v.id), 'jobsPerSec', 0)} | ${cell(fig(r, 'throughput', v.id), 'jobsPerSec', 0)} | ${cell(fig(r, 'latency', v.id), 'p50')} | ${cell(fig(r, 'latency', v.id), 'p99')} | ${cell(fig(r, 'latency-sparse', v.id), 'p50')} | ${cell(fig(r, 'latency-sparse', v.id), 'p99')} | ${v.notify ? 'NOTIFY' : 'poll'}, polls every ${v.pollIntervalMs} ms |`,
    );
  }
  const lat = r.figures.find((x) => x.scenario === 'latency');
  const sparse = r.figures.find((x) => x.scenario === 'latency-sparse');
  out.push(
    '',
    `Throughput: ${jobs(small)} and ${jobs(tp)} no-op jobs enqueued up front, drained by one worker process. Latency: handler start minus enqueue commit, producer in another process at ${String(lat?.params.rate ?? '?')} jobs/s for ${String(lat?.params.jobs ?? '?')} jobs; sparse: ${String(sparse?.params.rate ?? '?')} jobs/s for ${String(sparse?.params.jobs ?? '?')} jobs. Each cell: median of ${String(r.args.runs)} counted run(s) (min–max).`,
    '',
  );
}
