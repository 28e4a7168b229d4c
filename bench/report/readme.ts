// Writes the README "Performance" section from a committed results JSON, so every
// figure in the README comes from the benchmark output, never typed by hand.
// Usage: npx tsx bench/report/readme.ts results/bench-<date>.json > .git/readme-parts/performance.md

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BenchReport } from '../main.ts';
import type { Figure } from '../scenarios/context.ts';
import { num, spreadText } from './format.ts';
import { microAndCeiling, peersRatios, recoveryTable, targetsTable } from './markdown.ts';

function f(r: BenchReport, sc: string, id: string): Figure | undefined {
  return r.figures.find((x) => x.scenario === sc && x.variantId === id);
}
function c(fig: Figure | undefined, key: string, digits?: number): string {
  if (!fig) return '—';
  if (fig.status !== 'ok') return 'failed';
  // JSON has no Infinity: a latency of a job that never started comes back as null.
  if (fig.summary[key]?.median == null && fig.note?.startsWith('could not keep up')) return 'did not keep up';
  return spreadText(fig.summary[key], digits);
}

/** Other committed full runs, so a reader sees how much the figures move between runs on this machine. */
async function otherRuns(): Promise<string[]> {
  const dir = path.dirname(file!);
  const others = (await readdir(dir)).filter((n) => /^bench-.*\.json$/.test(n) && n !== path.basename(file!)).sort();
  const lines: string[] = [];
  for (const n of others) {
    const o = JSON.parse(await readFile(path.join(dir, n), 'utf8')) as BenchReport;
    if (o.args.quick) continue;
    const pick = (sc: string, id: string, k: string) => c(f(o, sc, id), k, k === 'jobsPerSec' ? 0 : undefined);
    lines.push(
      `- [results/${n.replace(/\.json$/, '.md')}](results/${n.replace(/\.json$/, '.md')}) (${o.machine.cpuModel}; load average at start ${o.machine.loadAvgAtStart?.join(' / ') ?? 'not recorded'}): Baton notify/claimIntoRunning on ${pick('throughput', 'baton-notify-cir', 'jobsPerSec')} jobs/s, latency p50 ${pick('latency', 'baton-notify-cir', 'p50')} ms; graphile-worker (performance config) ${pick('throughput', 'graphile-perf', 'jobsPerSec')} jobs/s, p50 ${pick('latency', 'graphile-perf', 'p50')} ms.`,
    );
  }
  return lines.length ? ['Other full runs committed alongside (same command, other moments, on the 2-core machine of their day: the CPU is named). Figures moved between runs by more than the within-run spread shows: between machines each system moved by its own factor, which is why targets are read as ratios within one run; within a machine the cause was not isolated (other work on the shared machine is the likely one; runs before the load average was recorded cannot show it):', '', ...lines, ''] : [];
}

const file = process.argv[2];
if (!file) throw new Error('usage: readme.ts results/bench-<date>.json');
const r = JSON.parse(await readFile(file, 'utf8')) as BenchReport;
const base = path.basename(file, '.json');
const m = r.machine;
const out: string[] = [
  '## Performance',
  '',
  `![Start latency distributions and throughput per system](results/${base}.svg)`,
  '',
  `Measured by \`${r.command.replace(/ --$/, '')}\` on ${r.startedAt.slice(0, 10)} at commit \`${m.gitCommit.slice(0, 10)}\`: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.postgres.version.split(' ').slice(0, 2).join(' ')} (${m.postgres.source.startsWith('embedded') ? 'the embedded server' : 'a given server'}) on the same host, Node ${m.node}. ` +
    `Each cell is the median of ${String(r.args.runs)} run(s) after ${r.args.quick ? "no" : "a discarded"} warm-up, with the spread (min–max); every run used a fresh database and was verified against it afterwards (each job done exactly once). ` +
    (r.interleaved ? 'Throughput and latency ran in rounds, every system once per round, so a drift of the machine lands on all systems of a round alike; the targets table says in how many rounds each target held. ' : '') +
    `All tables: [results/${base}.md](results/${base}.md); raw data: [results/${base}.json](results/${base}.json).`,
  '',
  '| System / mode | throughput (jobs/s) | latency p50 (ms) | latency p99 (ms) | sparse p50 (ms) | sparse p99 (ms) | polls every |',
  '|---|---:|---:|---:|---:|---:|---:|',
];
for (const v of r.variants) {
  out.push(
    `| ${v.label} | ${c(f(r, 'throughput', v.id), 'jobsPerSec', 0)} | ${c(f(r, 'latency', v.id), 'p50')} | ${c(f(r, 'latency', v.id), 'p99')} | ${c(f(r, 'latency-sparse', v.id), 'p50')} | ${c(f(r, 'latency-sparse', v.id), 'p99')} | ${v.pollIntervalMs} ms${v.notify ? ' (+ NOTIFY)' : ''} |`,
  );
}
const lat = r.figures.find((x) => x.scenario === 'latency');
const sparse = r.figures.find((x) => x.scenario === 'latency-sparse');
const tp = r.figures.find((x) => x.scenario === 'throughput');
out.push(
  '',
  `Throughput: ${String(tp?.params.jobs ?? '?')} no-op jobs enqueued up front, drained by one process. Latency: handler start minus enqueue commit, producer in a separate process at ${String(lat?.params.rate ?? '?')} jobs/s for ${String(lat?.params.jobs ?? '?')} jobs; sparse: ${String(sparse?.params.rate ?? '?')} jobs/s for ${String(sparse?.params.jobs ?? '?')} jobs.`,
  '',
);
const http = r.figures.filter((x) => x.scenario === 'latency-http');
if (http.length) {
  out.push(
    'Through the daemon (`baton serve` runs the jobs; the producer POSTs `/api/jobs` over an undici keep-alive pool). The daemon that accepts a job also works its queue, so it wakes its own claim loop in memory, without a NOTIFY round trip, in poll mode as well:',
    '', '| Mode | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) |', '|---|---:|---:|---:|---:|');
  for (const h of http) out.push(`| ${h.label} | ${c(h, 'p50')} | ${c(h, 'p95')} | ${c(h, 'p99')} | ${c(h, 'max')} |`);
  out.push('');
} else {
  out.push('Start latency through the HTTP API was not measured in this run.', '');
}
const rec: string[] = [];
recoveryTable(r, rec);
out.push(...rec.map((l) => l.replace(/^## /, '### ')));
const ratios: string[] = [];
peersRatios(r, ratios);
out.push(...ratios.map((l) => l.replace(/^## /, '### ')));
const targets: string[] = [];
targetsTable(r, targets);
out.push(...targets.map((l) => l.replace(/^## /, '### ')));
const ceil: string[] = [];
microAndCeiling(r, ceil);
out.push(...ceil.map((l) => l.replace(/^## /, '### ')));
if (r.missing.length) out.push('Not measured in this run:', '', ...r.missing.map((x) => `- ${x}`), '');
out.push(
  '### Reproduce',
  '',
  '```sh',
  `npm run bench                        # everything, embedded PostgreSQL (this run took ${Math.round((Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 60_000)} min)`,
  'DATABASE_URL=postgres://… npm run bench   # against your server (a fresh database per run, dropped after)',
  'npm run bench -- --quick --peers none   # the CI smoke test: small, < 1 min, checks counts only',
  'npm run bench -- --peers none --scenarios throughput,latency --runs 5',
  'npm run bench -- --profile-sql       # adds pg_stat_statements\' top statements to the report',
  'npx tsx bench/latency-breakdown.ts --rate 10   # one start latency, stage by stage, per system (diagnostics)',
  '```',
  '',
  ...(await otherRuns()),
  'Results land in `results/bench-<date>.{json,md,svg}` (`--quick` writes to the git-ignored `results/quick/`).',
  '',
  '### What these numbers do and do not mean',
  '',
  `- They come from one small shared machine (${m.cores} cores) with the database on the same host: the workers, the producer, PostgreSQL and (for peers) their own processes compete for the same two cores, and other work on the machine adds noise; the spread columns show how much. On a dedicated database server the absolute figures will differ; the comparisons (same machine, same server, one system at a time, in rounds that alternate the systems) are the point.`,
  `- Durability is on (\`fsync=${m.postgres.settings.fsync ?? '?'}\`, \`synchronous_commit=${m.postgres.settings.synchronous_commit ?? '?'}\`): every outcome write waits for a WAL flush, which bounds throughput per connection here. Baton's claims do not wait for theirs (see *Asynchronous claims, and the token floor*); graphile-worker's and pg-boss's do, and so do the micro-benchmarks' and pgbench's claims.`,
  '- Start latency is measured from the moment the producer has the enqueue acknowledged (its commit) to the handler\'s first line, on one host-wide monotonic clock. Baton\'s wake-up NOTIFY is a statement of its own, sent in the insert\'s round trip and run by PostgreSQL once the insert\'s commit is durable (outside the insert\'s transaction, by design; a transaction that only notifies waits for no WAL flush of its own), and the enqueue is answered after it, as a peer\'s whose NOTIFY fires inside the insert\'s commit is. The clock starts when the producer has read its acknowledgement, so a producer slower to read it makes its own figures look shorter; a job can even start before that (negative samples, visible as the min in the JSON).',
  '- Throughput uses no-op handlers: it measures the queue\'s own overhead (claim, lease, fenced outcome write), not your handlers.',
  `- Baton's worker ran ${String((r.variants.find((v) => v.system === 'baton')?.options as { concurrency?: number } | undefined)?.concurrency ?? '?')} slots, so its claims and outcome writes carry up to that many jobs each. The pgbench ceiling is measured at batch 1 and 50, as the issue defines it, and at batch 200, about the batch Baton's claims reach in the throughput run; the target reads batch 50. A share above 100% says the engine's larger batches amortise each commit further than that batch can, not that it beats PostgreSQL.`,
  '- Poll mode\'s latency is its poll interval at work: a job waits on average half an interval (p50 near interval/2, p99 near the interval). The interval is shown next to each row; NOTIFY mode keeps the poll only as a fallback.',
  '- Peers ran with their documented configurations as listed in the results file; a figure marked as capped or "not started" means the system did not finish within the time the harness allows, and the rate shown is over what it did finish.',
  '- pg-boss 10 with one `work()` subscription fetches `batchSize` jobs (default 1) per polling interval and then waits out the rest of the interval, so with its defaults it completes about one job per interval; its throughput and "did not keep up" latency rows are that behaviour, measured.',
  '- A run whose database state does not match the handler executions (a job lost, run twice or left unfinished) is reported as failed, never as a figure.',
  '',
);
process.stdout.write(`${out.join('\n')}\n`);
