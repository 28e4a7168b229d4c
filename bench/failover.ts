// bench:failover: a primary failover under load (test/failover/scenario.ts), `--rounds` times
// with synchronous and with asynchronous replication, alternating. Writes
// results/failover/failover-<time>.json and .md: what each mode lost, tokens reused, stale
// outcomes accepted, and the time until jobs finished again. Figures come from the runs only.

import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { type FailoverResult, type ReplicationMode, runFailover } from '../test/failover/scenario.ts';
import { PG_BIN } from '../test/helpers/pg-cluster.ts';
import { writeResults } from './report/write-results.ts';

const git = (args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();

function machine() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    gitCommit: git(['rev-parse', 'HEAD']),
    gitDirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
    loadAvgAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    postgres: execFileSync(`${PG_BIN}/postgres`, ['--version'], { encoding: 'utf8' }).trim(),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '3' },
      before: { type: 'string', default: '400' },
      after: { type: 'string', default: '200' },
      out: { type: 'string', default: 'results/failover' },
    },
  });
  const rounds = Number(values.rounds);
  const params = { rounds, before: Number(values.before), after: Number(values.after), engines: 2, slots: 8, producers: 4, handlerMs: 5 };
  const m = machine();
  const at = new Date();
  const runs: FailoverResult[] = [];
  for (let i = 0; i < rounds; i++) {
    const order: ReplicationMode[] = i % 2 === 0 ? ['sync', 'async'] : ['async', 'sync'];
    for (const mode of order) {
      const r = await runFailover({ mode, ...params });
      process.stderr.write(`${JSON.stringify(r)}\n`);
      runs.push(r);
    }
  }
  const command = `npm run bench:failover -- ${process.argv.slice(2).join(' ')}`.trim();
  const out = { command, at: at.toISOString(), machine: { ...m, loadAvgAtEnd: os.loadavg() }, params, runs };
  const base = await writeResults(values.out!, 'failover', out, report(out), at);
  process.stdout.write(`${base}.json\n${base}.md\n`);
}

function report(o: {
  command: string;
  at: string;
  machine: ReturnType<typeof machine>;
  params: Record<string, number>;
  runs: FailoverResult[];
}): string {
  const m = o.machine;
  const lines = [
    '# Primary failover under load',
    '',
    `Command: \`${o.command}\`, commit ${m.gitCommit}${m.gitDirty ? ' (dirty)' : ''}, ${o.at}.`,
    '',
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}, ${m.postgres}. Load average at start ${m.loadAvgAtStart.join(' / ')}.`,
    '',
    `Each run: a primary and a streaming standby (pg_basebackup) on this machine, ${o.params.engines} engines with ${o.params.slots} slots each on a multi-host URL (target_session_attrs=read-write), ${o.params.producers} producers enqueueing one job at a time, handlers of ${o.params.handlerMs} ms. After ${o.params.before} acknowledged enqueues the standby is promoted (pg_ctl promote) and the old primary stopped (immediate); producers go on until ${o.params.after} more are acknowledged, then every acknowledged job is looked up on the new primary. Test clusters run with fsync off (the OS survives), so a loss is replication's, not the disk's. sync: synchronous_standby_names = '*', synchronous_commit = on. async: no synchronous standby.`,
    '',
    '| mode | acknowledged enqueues | lost | acknowledged outcomes | lost (job ran again) | tokens reused | stale outcomes accepted | unfinished | first outcome after stop, ms | first enqueue after stop, ms | enqueues failed and retried |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of o.runs) {
    lines.push(
      `| ${r.mode} | ${r.acknowledgedEnqueues} | ${r.lostEnqueues} | ${r.acknowledgedOutcomes} | ${r.lostOutcomes} | ${r.reusedTokens} | ${r.staleWritesAccepted} | ${r.unfinished} | ${r.resumeOutcomeMs} | ${r.resumeEnqueueMs} | ${r.enqueueErrors} |`,
    );
  }
  lines.push(
    '',
    '| mode | runs | lost enqueues, total | lost outcomes, total | tokens reused | stale outcomes | median first outcome after stop, ms | max |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const mode of ['sync', 'async'] as const) {
    const rs = o.runs.filter((r) => r.mode === mode);
    const sum = (f: (r: FailoverResult) => number) => rs.reduce((s, r) => s + f(r), 0);
    lines.push(
      `| ${mode} | ${rs.length} | ${sum((r) => r.lostEnqueues)} of ${sum((r) => r.acknowledgedEnqueues)} | ${sum((r) => r.lostOutcomes)} of ${sum((r) => r.acknowledgedOutcomes)} | ${sum((r) => r.reusedTokens)} | ${sum((r) => r.staleWritesAccepted)} | ${median(rs.map((r) => r.resumeOutcomeMs))} | ${Math.max(...rs.map((r) => r.resumeOutcomeMs))} |`,
    );
  }
  lines.push('');
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
