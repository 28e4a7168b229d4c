// pg_upgrade (a fresh initdb, its WAL reset to timeline 1) of a cluster that was promoted puts
// the token's timeline offset back to 0, so its tokens would restart (timeline - 1) * 2^40 below
// the ones it handed out before: without the step docs/operations.md gives (advance the sequence
// by the old timeline's offset before workers start) the first claim after the upgrade got 2
// against 1099511627777 before it. With the step, tokens keep increasing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { openPool } from '../../src/db/pg/open-pool.ts';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { insertJob } from '../helpers/factory.ts';
import { clusterUnavailable, freePort, type PgCluster } from '../helpers/pg-cluster.ts';
import { waitFor } from '../helpers/wait.ts';
import { usePrimaryAndStandby } from './clusters.ts';

const BIN = execFileSync('pg_config', ['--bindir']).toString().trim();
const asPostgres = (cmd: string, args: string[], cwd = os.tmpdir()) =>
  process.getuid?.() === 0 ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { cwd }) : execFileSync(cmd, args, { cwd });

// The two statements of docs/operations.md (Upgrades and migrations, pg_upgrade).
const TIMELINE_SQL = `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint::text AS timeline`;
const ADVANCE_SQL = `SELECT setval('baton.lease_token_seq', last_value + ($1::bigint - 1) * 1099511627776) FROM baton.lease_token_seq`;

const unavailable = clusterUnavailable();
if (unavailable) console.warn(`test/failover/upgrade-timeline.test.ts: skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('tokens across pg_upgrade of a promoted cluster', () => {
  let primary: PgCluster;
  let standby: PgCluster;
  usePrimaryAndStandby((p, s) => {
    primary = p;
    standby = s;
  });

  const claim = async (url: string) => {
    const pool = openPool({ connectionString: url, max: 1 });
    try {
      const [l] = await new PgExecutor(pool, '"baton"').jobClaim({ queue: 'q', limit: 1, owner: 'w', leaseMs: 60_000, intoRunning: true });
      return BigInt(l!.token);
    } finally {
      await pool.end();
    }
  };

  it('a promoted cluster upgraded with pg_upgrade hands out larger tokens once the sequence is advanced as documented', async () => {
    const admin = new pg.Pool({ connectionString: primary.url(), max: 1 });
    await migrate(admin, { schema: 'baton' });
    await insertJob(admin, { schema: 'baton', queue: 'q' });
    await insertJob(admin, { schema: 'baton', queue: 'q' });
    const lsn = (await admin.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
    await admin.end();
    const sb = new pg.Pool({ connectionString: standby.url(), max: 1 });
    await waitFor(async () => (await sb.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn])).rows[0].ok, {
      message: 'the standby to replay the jobs',
    });
    await sb.end();
    await standby.promote();
    await primary.destroy();
    const before = await claim(standby.url()); // timeline 2: above 2^40
    // The documented step, part one: the old cluster's timeline, read before the upgrade.
    const old = new pg.Pool({ connectionString: standby.url(), max: 1 });
    const [{ timeline }] = (await old.query<{ timeline: string }>(TIMELINE_SQL)).rows as [{ timeline: string }];
    await old.end();

    // pg_upgrade (same major version, as its own tests do) into a fresh initdb: its WAL starts on timeline 1.
    asPostgres(path.join(BIN, 'pg_ctl'), ['-D', standby.dataDir, '-m', 'fast', '-w', 'stop']);
    const work = mkdtempSync(path.join(os.tmpdir(), 'baton-pg-upgrade-'));
    try {
      if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', work]);
      const newData = path.join(work, 'data');
      asPostgres(path.join(BIN, 'initdb'), ['-D', newData, '-U', 'postgres', '-A', 'trust', '--no-sync']);
      const port = await freePort();
      asPostgres(
        path.join(BIN, 'pg_upgrade'),
        ['-b', BIN, '-B', BIN, '-d', standby.dataDir, '-D', newData, '-p', String(await freePort()), '-P', String(port), '-U', 'postgres'],
        work,
      );
      asPostgres(path.join(BIN, 'pg_ctl'), [
        '-D',
        newData,
        '-l',
        path.join(work, 'log'),
        '-o',
        `-p ${port} -k ${work} -c listen_addresses=127.0.0.1`,
        '-w',
        'start',
      ]);
      try {
        const upgraded = `postgres://postgres@127.0.0.1:${port}/postgres`;
        // Part two, after the upgrade and before any worker starts.
        const fresh = new pg.Pool({ connectionString: upgraded, max: 1 });
        await fresh.query(ADVANCE_SQL, [timeline]);
        await fresh.end();
        const after = await claim(upgraded);
        expect(before).toBeGreaterThan(2n ** 40n);
        expect(after).toBeGreaterThan(before);
      } finally {
        asPostgres(path.join(BIN, 'pg_ctl'), ['-D', newData, '-m', 'immediate', '-w', 'stop']);
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    // initdb, pg_upgrade and three server starts: about 6 s alone, several times that while
    // other files run beside it on two cores.
  }, 120_000);
});
