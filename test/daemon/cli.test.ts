// The CLI's answers as a user sees them, through bin/baton.js in a child process:
// --version, each command's --help listing only the settings it reads (and its
// parser taking only those flags), and one plain line (no stack trace, no password)
// with exit code 1 when the database (or the direct URL behind a pooler) cannot be reached.

import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/daemon/settings.ts';
import { EXIT_CONFIG, EXIT_FAILED } from '../../src/daemon/shutdown.ts';
import { runBaton, waitExit } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** Port 1 on loopback: nothing listens, the connection is refused at once. */
const UNREACHABLE = 'postgres://u:secret@127.0.0.1:1/x';
const PLAIN_LINE = 'cannot connect to PostgreSQL at postgres://u:***@127.0.0.1:1/x: connect ECONNREFUSED 127.0.0.1:1';
const STACK_FRAME = /^\s+at /m;
/** What the one-shot commands reach the database with. */
const DATABASE_SETTINGS = [
  'DATABASE_URL',
  'BATON_POOLER',
  'BATON_DIRECT_URL',
  'BATON_CLUSTERS',
  'BATON_QUEUE_ROUTES',
  'BATON_DEFAULT_CLUSTER',
  'BATON_SCHEMA',
  'BATON_DATA_DIR',
  'BATON_PG_PORT',
  'LOG_LEVEL',
];

/** The environment variables a --help lists, in order (each settings line is `  --flag  ENV  [default]`). */
function listedSettings(help: string): string[] {
  return [...help.matchAll(/^ {2}--\S+\s+([A-Z][A-Z_]+)\s+\[/gm)].map((m) => m[1]!);
}

/** The messages of a daemon's JSON log lines at level fatal or error (50 and up). */
function fatalMessages(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((entry) => entry.level >= 50)
    .map((entry) => entry.msg);
}

async function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = runBaton(args, env);
  const code = await waitExit(p, 30_000);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('baton CLI', () => {
  it.each(['--version', '-v'])('%s prints the package version', async (flag) => {
    const r = await run([flag]);
    expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it.each([
    ['serve', Object.keys(SETTINGS)],
    ['migrate', DATABASE_SETTINGS],
    // The producer also reads the default attempt budget (the job's, when --max-attempts is given) and whether to NOTIFY.
    ['enqueue', [...DATABASE_SETTINGS, 'BATON_DISPATCH', 'BATON_MAX_ATTEMPTS']],
    ['cron', DATABASE_SETTINGS],
    ['workflow', [...DATABASE_SETTINGS, 'BATON_DISPATCH']],
  ])('`baton %s --help` lists the settings that command reads, and no others', async (command, expected) => {
    const r = await run([command, '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(listedSettings(r.stdout).sort()).toEqual([...expected].sort());
  });

  it.each([
    [['enqueue', '--type', 'noop', '--port', '9000'], '--port'],
    [['migrate', '--queues', 'default:1'], '--queues'],
    [['enqueue', '--type', 'noop', '--api-token=abcdefgh12'], '--api-token'],
  ])('`baton %j`: a flag of another command is a usage error naming it, exit 2, nothing started', async (args, flag) => {
    // An unreachable URL: were the flag accepted, the command would fail with exit 1 instead.
    const r = await run(args, { DATABASE_URL: UNREACHABLE });
    expect(r.code, r.stderr).toBe(EXIT_CONFIG);
    expect(r.stderr).toBe(`baton: ${flag} is a flag of "baton serve", not of "baton ${args[0]}" (see baton ${args[0]} --help)\n`);
    expect(r.stdout).toBe('');
  });

  it('an unknown flag is a usage error naming it, exit 2', async () => {
    const r = await run(['migrate', '--prot', '1'], { DATABASE_URL: UNREACHABLE });
    expect(r.code, r.stderr).toBe(EXIT_CONFIG);
    expect(r.stderr).toBe('baton: unknown flag --prot (see baton migrate --help)\n');
  });

  it.each([['migrate'], ['enqueue', '--type', 'noop']])(
    'an unreachable database: `baton %s` ends with one plain line naming the redacted URL, exit 1',
    async (...args) => {
      const r = await run(args, { DATABASE_URL: UNREACHABLE });
      expect(r.code, r.stderr).toBe(EXIT_FAILED);
      // Besides the JSON log lines (stderr for one-shot commands), just the one.
      const plain = r.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'));
      expect(plain).toEqual([`baton: ${PLAIN_LINE}`]);
      expect(r.stderr).not.toMatch(STACK_FRAME);
      expect(r.stderr).not.toContain('secret');
      expect(r.stdout).toBe('');
    },
  );

  it('an unreachable database: `baton serve` logs one fatal line naming the redacted URL, no stack, exit 1', async () => {
    const r = await run(['serve', '--port', '0'], { DATABASE_URL: UNREACHABLE });
    expect(r.code, r.stdout + r.stderr).toBe(EXIT_FAILED);
    expect(fatalMessages(r.stdout)).toEqual([PLAIN_LINE]);
    expect(r.stdout + r.stderr).not.toMatch(STACK_FRAME);
    expect(r.stdout + r.stderr).not.toContain('secret');
  });

  it('an unreachable BATON_DIRECT_URL behind a transaction pooler: `baton serve` stops at start-up naming the setting, exit 1', async () => {
    // DATABASE_URL answers (the probe only connects); the direct URL does not.
    const r = await run(['serve', '--port', '0'], { DATABASE_URL: db.url, BATON_POOLER: 'transaction', BATON_DIRECT_URL: UNREACHABLE });
    expect(r.code, r.stdout + r.stderr).toBe(EXIT_FAILED);
    expect(fatalMessages(r.stdout)).toEqual([
      'cannot connect to PostgreSQL at postgres://u:***@127.0.0.1:1/x (BATON_DIRECT_URL): connect ECONNREFUSED 127.0.0.1:1',
    ]);
    expect(r.stdout + r.stderr).not.toContain('secret');
  });

  // `script` (util-linux) runs the command on a pseudo-terminal, as a shell in a terminal would.
  it.skipIf(!existsSync('/usr/bin/script'))('logs readable lines on a terminal (pino-pretty), JSON lines into a pipe', async () => {
    const bin = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));
    const tty = spawnSync('/usr/bin/script', ['-qec', `${process.execPath} ${bin} serve --port 0`, '/dev/null'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: UNREACHABLE },
      timeout: 30_000,
    });
    expect(tty.status, tty.stdout).toBe(EXIT_FAILED);
    expect(tty.stdout).toMatch(/FATAL.*: .*cannot connect to PostgreSQL at postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/x/);
    expect(tty.stdout).not.toContain('{"level"');
    // Into a pipe (the test above): one JSON object per line.
    const piped = await run(['serve', '--port', '0'], { DATABASE_URL: UNREACHABLE });
    expect(
      piped.stdout
        .split('\n')
        .filter(Boolean)
        .every((l) => l.startsWith('{"level"')),
    ).toBe(true);
  });

  it('in a checkout without dist/ (npm install no longer builds), the launcher says to build, in one line, exit 1', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-unbuilt-'));
    try {
      mkdirSync(path.join(dir, 'bin'));
      copyFileSync(new URL('../../bin/baton.js', import.meta.url), path.join(dir, 'bin', 'baton.js'));
      const r = spawnSync(process.execPath, [path.join(dir, 'bin', 'baton.js'), '--version'], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr).toBe('baton: dist/ is not built; run `npm run build` (or `npm start`, which builds) in this checkout first\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
