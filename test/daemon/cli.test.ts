// The CLI's answers as a user sees them, through bin/baton.js in a child process:
// --version, and one plain line (no stack trace, no password) with exit code 1 when
// the database cannot be reached. The output is the CLI's state here.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runBaton, waitExit } from '../e2e/daemon-process.ts';
import { EXIT_FAILED } from '../../src/daemon/shutdown.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** Port 1 on loopback: nothing listens, the connection is refused at once. */
const UNREACHABLE = 'postgres://u:secret@127.0.0.1:1/x';
const PLAIN_LINE = 'cannot connect to PostgreSQL at postgres://u:***@127.0.0.1:1/x: connect ECONNREFUSED 127.0.0.1:1';
const STACK_FRAME = /^\s+at /m;

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
    const failures = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((entry) => entry.level >= 50);
    expect(failures.map((f) => f.msg)).toEqual([PLAIN_LINE]);
    expect(r.stdout + r.stderr).not.toMatch(STACK_FRAME);
    expect(r.stdout + r.stderr).not.toContain('secret');
  });
});
