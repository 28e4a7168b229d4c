// Where a persistent embedded cluster lives. Under root the server runs as the
// `postgres` OS user, which must be able to enter every directory above its data (a
// 0700 home or checkout, e.g. under /root, is the usual trap). When it cannot, the
// data goes to a directory it can reach instead of start-up failing, and we say where.
// Invariants: the fallback for a requested path is the same on every start (so a
// restart, or `baton enqueue`, finds the same cluster); an existing cluster is never
// abandoned for an empty one elsewhere; not as root, the requested path is used as is.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../core/logger.ts';
import { EmbeddedPostgresError, giveToServer, type ServerIds } from './embedded-server.ts';

/** Where fallbacks go first: one directory per requested path, named by its hash. */
const FALLBACK_ROOT = '/var/lib/baton';
const HASH_CHARS = 12;

/**
 * The fallbacks for `requested`, in the order tried: /var/lib/baton/<hash>, then
 * <os.tmpdir()>/baton-data-<hash> (where /var/lib cannot be written to).
 */
export function fallbackDirs(requested: string): string[] {
  const hash = createHash('sha256').update(path.resolve(requested)).digest('hex').slice(0, HASH_CHARS);
  return [path.join(FALLBACK_ROOT, hash), path.join(os.tmpdir(), `baton-data-${hash}`)];
}

/**
 * The directory to keep the cluster of `requested` (absolute) in, created: `requested`
 * itself when the server's user can enter it (always, when we are not root), else the
 * first fallback that works, owned by that user, with one warning naming it.
 * @throws EmbeddedPostgresError when `requested` already holds a cluster the user cannot
 *   reach, or no fallback works
 */
export async function resolveDataDir(requested: string, ids: ServerIds, log: Logger): Promise<string> {
  if (ids.uid === undefined) {
    await mkdir(requested, { recursive: true, mode: 0o755 });
    return requested;
  }
  // Create it only where the user can reach it: a fallback leaves no empty dir behind.
  let blocked = await blockedAt(requested, ids);
  if (!blocked) {
    await mkdir(requested, { recursive: true, mode: 0o755 });
    blocked = await blockedAt(requested, ids); // a umask may have made it 0700
    if (!blocked) return requested;
  }
  const why =
    `the embedded PostgreSQL runs as the "postgres" OS user (we are root), which cannot enter ${blocked.dir} ` +
    `(mode ${blocked.mode.toString(8)})`;
  if (existsSync(path.join(requested, 'pg', 'PG_VERSION'))) {
    throw new EmbeddedPostgresError(`${why}, and ${requested} holds its data; let it in (chmod o+x ${blocked.dir}), or set DATABASE_URL`);
  }
  const failures: string[] = [];
  for (const dir of fallbackDirs(requested)) {
    try {
      await prepareFallback(dir, ids);
      const fallbackBlocked = await blockedAt(dir, ids);
      if (fallbackBlocked) throw new Error(`cannot enter ${fallbackBlocked.dir}`);
      log.warn(
        { requested, dataDir: dir },
        `${why}: keeping its data in ${dir} instead of ${requested} (set BATON_DATA_DIR to choose the place)`,
      );
      return dir;
    } catch (err) {
      failures.push(`${dir}: ${(err as Error).message}`);
    }
  }
  throw new EmbeddedPostgresError(
    `${why}, nor use a fallback (${failures.join('; ')}); set BATON_DATA_DIR to a directory it can reach, or set DATABASE_URL`,
  );
}

/**
 * Creates `dir`, any directory we create above it searchable by all (they hold only
 * such dirs), and `dir` itself private to the server's user.
 */
async function prepareFallback(dir: string, ids: ServerIds): Promise<void> {
  const first = await mkdir(dir, { recursive: true });
  if (first !== undefined) {
    for (let d = path.dirname(dir); d.length >= first.length; d = path.dirname(d)) await chmod(d, 0o755);
  }
  await chmod(dir, 0o700);
  await giveToServer(dir, ids);
}

/**
 * The first existing directory from `dir` up to / that the server's user cannot enter
 * (no search permission for it), or undefined.
 */
async function blockedAt(dir: string, ids: ServerIds): Promise<{ dir: string; mode: number } | undefined> {
  for (let d = dir; ; d = path.dirname(d)) {
    const st = await stat(d).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (st) {
      const bit = st.uid === ids.uid ? 0o100 : st.gid === ids.gid ? 0o010 : 0o001;
      if ((st.mode & bit) === 0) return { dir: d, mode: st.mode & 0o777 };
    }
    if (path.dirname(d) === d) return undefined;
  }
}
