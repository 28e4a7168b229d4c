// The choice of a persistent cluster's directory (no PostgreSQL started): the
// requested path when the server's user can reach it, a fallback named by the
// path's hash otherwise, and never a fallback away from an existing cluster.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { noopLogger } from '../../src/core/logger.ts';
import { fallbackDirs, resolveDataDir } from '../../src/daemon/embedded-data-dir.ts';

/** A uid and gid nobody has: a server user that cannot enter our 0700 temp dirs. */
const STRANGER = { uid: 54_321, gid: 54_321 };
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function privateDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'baton-datadir-')); // 0700, ours
  dirs.push(d);
  return d;
}

describe('resolveDataDir', () => {
  it('not as root (no server ids): the requested path, created', async () => {
    const requested = path.join(await privateDir(), 'data');
    expect(await resolveDataDir(requested, {}, noopLogger)).toBe(requested);
    expect(existsSync(requested)).toBe(true);
  });

  it('an existing cluster the server cannot reach is an error, not an empty cluster elsewhere', async () => {
    const requested = path.join(await privateDir(), 'data');
    await mkdir(path.join(requested, 'pg'), { recursive: true });
    await writeFile(path.join(requested, 'pg', 'PG_VERSION'), '18\n');
    await expect(resolveDataDir(requested, STRANGER, noopLogger)).rejects.toThrow(`${requested} holds its data`);
    for (const f of fallbackDirs(requested)) expect(existsSync(f)).toBe(false);
  });

  it('the fallbacks depend only on the requested path: the same on every start', () => {
    const [a, b] = [fallbackDirs('/root/app/.baton-data'), fallbackDirs('/root/app/x/../.baton-data')];
    expect(a).toEqual(b);
    expect(a[0]).toMatch(/^\/var\/lib\/baton\/[0-9a-f]{12}$/);
    expect(a[1]).toBe(path.join(os.tmpdir(), `baton-data-${path.basename(a[0]!)}`));
    expect(fallbackDirs('/root/other/.baton-data')[0]).not.toBe(a[0]);
  });
});
