// `npm run bench:ab -- <ref> [<ref> ...]`: the same workloads on several commits of Baton,
// interleaved round by round on one tuned server of the bench's own, so a change's cost shows
// as a ratio against the first ref with its spread over rounds. One ref: that ref against the
// working tree ('.'). Every run verifies its rows (exit 1 otherwise); speed is never judged here.

import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { abCacheDir, type BuiltRef, buildRef, REPO_ROOT } from './ab/build.ts';
import { type AbReport, type AbScenario, compare, renderAbMarkdown, SCENARIOS } from './ab/report.ts';
import { parseBenchArgs } from './args.ts';
import { machineRecord } from './machine.ts';
import { Progress } from './progress.ts';
import { runMain } from './run-main.ts';
import type { Ctx, RunRecord } from './scenarios/context.ts';
import { latency } from './scenarios/latency.ts';
import type { Measurement } from './scenarios/summarize.ts';
import { throughput } from './scenarios/throughput.ts';
import { openServer, type ServerChoice } from './server.ts';
import { variantById } from './systems/variants.ts';

const HELP = `npm run bench:ab -- <ref> [<ref> ...] [--rounds 5] [--scenarios ${SCENARIOS.map((s) => s.id).join(',')}]
  [--quick] [--no-warmup] [--sparse-jobs 200] [--latency-jobs 1000] [--out results/ab] [--server cluster|embedded|URL]
The first ref is the baseline; with one ref, the second is '.' (the working tree, committed or not).
Each ref is checked out in a git worktree under BENCH_AB_CACHE (default $TMPDIR/baton-bench-ab), its
dependencies installed from its own lockfile, and compiled by this checkout's TypeScript.
Every round runs each scenario on each ref, the refs' order reversed every other round.
`;

interface AbArgs {
  refs: string[];
  rounds: number;
  warmup: boolean;
  scenarios: AbScenario[];
  sparseJobs: number;
  latencyJobs: number;
  outDir: string;
  server: ServerChoice;
  quick: boolean;
}

function parse(argv: string[]): AbArgs {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      rounds: { type: 'string' },
      scenarios: { type: 'string' },
      quick: { type: 'boolean', default: false },
      'no-warmup': { type: 'boolean', default: false },
      'sparse-jobs': { type: 'string' },
      'latency-jobs': { type: 'string' },
      out: { type: 'string' },
      server: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(HELP);
    process.exit(values.help ? 0 : 2);
  }
  const int = (raw: string | undefined, fallback: number, flag: string) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} must be a positive integer, got "${raw}"`);
    return n;
  };
  const ids = values.scenarios?.split(',').map((s) => s.trim()) ?? SCENARIOS.map((s) => s.id);
  for (const id of ids) {
    if (!SCENARIOS.some((s) => s.id === id))
      throw new Error(`--scenarios: unknown "${id}" (allowed: ${SCENARIOS.map((s) => s.id).join(', ')})`);
  }
  const quick = values.quick;
  // Reuses the main bench's --server parsing (cluster, embedded or a URL).
  const server = parseBenchArgs(values.server ? ['--server', values.server] : []).server;
  return {
    refs: positionals.length === 1 ? [positionals[0]!, '.'] : positionals,
    rounds: int(values.rounds, quick ? 1 : 5, 'rounds'),
    warmup: !values['no-warmup'] && !quick,
    scenarios: SCENARIOS.filter((s) => ids.includes(s.id)).map((s) =>
      quick ? { ...s, jobs: Math.min(s.jobs, s.kind === 'drain' ? 2_000 : 50) } : s,
    ),
    sparseJobs: int(values['sparse-jobs'], 200, 'sparse-jobs'),
    latencyJobs: int(values['latency-jobs'], 1_000, 'latency-jobs'),
    outDir: values.out ?? (quick ? 'results/quick' : 'results/ab'),
    server,
    quick,
  };
}

function measurement(ctx: Ctx, s: AbScenario): Measurement {
  const v = variantById(s.variantId);
  if (s.kind === 'drain')
    return throughput({ ...ctx, args: { ...ctx.args, jobs: s.jobs } }, v, 'throughput', { analyze: s.analyze === true });
  return latency(ctx, v, { rate: s.rate!, jobs: s.jobs, via: 'library', scenario: s.id });
}

async function once(m: Measurement, round: number, warm: boolean): Promise<RunRecord> {
  try {
    return { warmup: warm, ...(await m.run(round, warm)) };
  } catch (err) {
    return { warmup: warm, ok: false, detail: err instanceof Error ? err.message.slice(0, 500) : String(err), values: {} };
  }
}

async function main(): Promise<number> {
  const args = parse(process.argv.slice(2));
  const progress = new Progress();
  const startedAt = new Date();
  const cache = abCacheDir();
  const refs: BuiltRef[] = args.refs.map((r) => buildRef(r, cache, (s) => progress.log(s)));
  for (const r of refs) progress.log(`ref ${r.label}: ${r.subject}`);
  const scenarios = args.scenarios.map((s) =>
    s.kind === 'latency' ? { ...s, jobs: args.quick ? s.jobs : s.rate === 10 ? args.sparseJobs : args.latencyJobs } : s,
  );

  const server = await openServer(args.server);
  try {
    const machine = await machineRecord(server);
    progress.log(`server: ${machine.postgres.source}`);
    const benchArgs = parseBenchArgs(args.quick ? ['--quick'] : []);
    // measurements[scenario][ref]
    const ms = scenarios.map((s) =>
      refs.map((r) => measurement({ server, args: benchArgs, progress, childEnv: { BENCH_BATON_LIB: r.entry } }, s)),
    );
    const records = scenarios.map(() => refs.map((): RunRecord[] => []));
    const loadAvg: number[][] = [];
    const total = args.rounds + (args.warmup ? 1 : 0);
    for (let round = 0; round < total; round++) {
      const warm = args.warmup && round === 0;
      loadAvg.push(os.loadavg().map((x) => Math.round(x * 100) / 100));
      progress.log(`round ${round + 1} of ${total}${warm ? ' (warm-up, not counted)' : ''}, load ${loadAvg.at(-1)!.join(' ')}`);
      for (let si = 0; si < scenarios.length; si++) {
        const order = refs.map((_, k) => k);
        if (round % 2 === 1) order.reverse();
        for (const k of order) {
          progress.update(`${scenarios[si]!.id} on ${refs[k]!.label}`);
          const rec = await once(ms[si]![k]!, round, warm);
          if (!rec.ok) progress.log(`FAILED ${scenarios[si]!.id} on ${refs[k]!.label}: ${rec.detail}`);
          records[si]![k]!.push(rec);
        }
      }
    }
    progress.done();
    const figures = scenarios.map((_, si) => refs.map((_, k) => ms[si]![k]!.figure(records[si]![k]!)));
    const report: AbReport = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      command: `npm run bench:ab -- ${process.argv.slice(2).join(' ')}`,
      machine,
      loadAvgPerRound: loadAvg,
      loadAvgAtEnd: os.loadavg().map((x) => Math.round(x * 100) / 100),
      rounds: args.rounds,
      warmup: args.warmup,
      refs: refs.map(({ given, sha, label, subject }) => ({ given, sha, label, subject })),
      scenarios,
      figures,
      comparisons: scenarios.map((s, si) => compare(s, figures[si]!)),
      ok: figures.flat().every((f) => f.status === 'ok'),
    };
    const md = renderAbMarkdown(report);
    process.stdout.write(`\n${md}\n`);
    const stamp = startedAt.toISOString().slice(0, 16).replace(/[:T]/g, '-');
    const outDir = path.resolve(REPO_ROOT, args.outDir);
    await mkdir(outDir, { recursive: true });
    const base = path.join(outDir, `ab-${stamp}-${refs.map((r) => r.sha.slice(0, 8)).join('-')}`);
    await writeFile(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(`${base}.md`, md);
    progress.log(`wrote ${path.relative(REPO_ROOT, base)}.json and .md`);
    return report.ok ? 0 : 1;
  } finally {
    await server.close();
  }
}

runMain('bench:ab', main);
