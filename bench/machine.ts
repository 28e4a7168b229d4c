// What the figures were measured on: host, PostgreSQL and its key settings, Node,
// the git commit. Recorded in every result file.

import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { PgServer } from './server.ts';

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
  postgres: { source: string; version: string; settings: Record<string, string> };
}

const PG_SETTINGS = [
  'shared_buffers',
  'synchronous_commit',
  'fsync',
  'max_connections',
  'wal_level',
  'full_page_writes',
  'work_mem',
  'max_wal_size',
];

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

export async function machineRecord(server: PgServer): Promise<MachineRecord> {
  const cpus = os.cpus();
  const [ver] = await server.query<{ v: string }>('select version() as v');
  const rows = await server.query<{ name: string; setting: string; unit: string | null }>(
    'select name, setting, unit from pg_settings where name = any($1)',
    [PG_SETTINGS],
  );
  const settings: Record<string, string> = {};
  for (const r of rows) settings[r.name] = r.unit ? `${r.setting} (${r.unit})` : r.setting;
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    gitCommit: git(['rev-parse', 'HEAD']),
    gitDirty: status !== '' && status !== 'unknown',
    loadAvgAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    postgres: { source: server.source, version: ver?.v ?? 'unknown', settings },
  };
}
