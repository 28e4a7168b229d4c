// What the figures were measured on: host, PostgreSQL and its key settings, Node,
// the git commit, the version of every system under test. Recorded in every result file.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PgServer } from './server.ts';
import type { SystemName } from './systems/types.ts';

export interface MachineRecord {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  gitCommit: string;
  gitDirty: boolean;
  /** 1/5/15-minute load averages when the run started (other work on a shared machine shows here). */
  loadAvgAtStart: number[];
  /**
   * source: where the server came from; tuned: what the bench set at start-up; settings: the
   * values in force (current_setting), tuned or not.
   */
  postgres: { source: string; version: string; tuned: Record<string, string>; settings: Record<string, string> };
  /**
   * BENCH_BATON_LIB: Baton under test is the compiled build of another commit (bench:ab's refs,
   * or by hand), not this checkout's sources; gitCommit is then the harness's commit only.
   */
  batonBuild?: { entry: string; commit: string };
  /** Installed version of each system under test (Baton: package version; the commit is gitCommit or batonBuild's). */
  systems: Record<SystemName, string>;
}

const PG_SETTINGS = [
  'shared_buffers',
  'work_mem',
  'max_wal_size',
  'max_connections',
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'wal_level',
  'autovacuum',
  'checkpoint_timeout',
];

const PACKAGES: Record<SystemName, string> = {
  baton: '..',
  'graphile-worker': '../node_modules/graphile-worker',
  'pg-boss': '../node_modules/pg-boss',
};

function packageVersion(dir: string): string {
  try {
    const file = new URL(`${dir}/package.json`, import.meta.url);
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** The commit a build's entry was compiled from: its worktree's HEAD. */
function batonBuild(entry: string): { entry: string; commit: string } {
  return { entry, commit: git(['-C', path.dirname(entry), 'rev-parse', 'HEAD']) };
}

export async function machineRecord(server: PgServer): Promise<MachineRecord> {
  const cpus = os.cpus();
  const [ver] = await server.query<{ v: string }>('select version() as v');
  const rows = await server.query<{ name: string; value: string }>(
    'select name, current_setting(name) as value from pg_settings where name = any($1)',
    [PG_SETTINGS],
  );
  const settings: Record<string, string> = {};
  for (const name of PG_SETTINGS) {
    const r = rows.find((x) => x.name === name);
    if (r) settings[name] = r.value;
  }
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    gitCommit: git(['rev-parse', 'HEAD']),
    gitDirty: status !== '' && status !== 'unknown',
    ...(process.env.BENCH_BATON_LIB ? { batonBuild: batonBuild(process.env.BENCH_BATON_LIB) } : {}),
    loadAvgAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    postgres: { source: server.source, version: ver?.v ?? 'unknown', tuned: server.tuned, settings },
    systems: Object.fromEntries(Object.entries(PACKAGES).map(([k, dir]) => [k, packageVersion(dir)])) as Record<SystemName, string>,
  };
}
