// Multi-host connection strings: parsed as libpq spells them (node-postgres cannot), refused
// with the setting named when bad, and every session lands on the writable host of a real
// primary and streaming standby, before and after the standby is promoted.
import { describe, expect, it } from 'vitest';
import { openApiKeys } from '../../src/create-api-keys.ts';
import { createBaton } from '../../src/create-baton.ts';
import { loadConfig } from '../../src/daemon/env.ts';
import { translatePgError } from '../../src/db/pg/errors.ts';
import {
  ConnectionStringError,
  type MultiHostConfig,
  NoPrimaryError,
  newClient,
  parseConnectionString,
} from '../../src/db/pg/multi-host.ts';
import { openPool } from '../../src/db/pg/open-pool.ts';
import { BatonError } from '../../src/types/errors.ts';
import { clusterUnavailable, type PgCluster } from '../helpers/pg-cluster.ts';
import { waitFor } from '../helpers/wait.ts';
import { usePrimaryAndStandby } from './clusters.ts';

describe('parseConnectionString', () => {
  it('leaves a one-host URL to pg as it is', () => {
    expect(parseConnectionString('postgres://u:p@h:5433/db?sslmode=disable')).toEqual({
      connectionString: 'postgres://u:p@h:5433/db?sslmode=disable',
    });
  });

  it('reads every host, default ports, IPv6 and target_session_attrs; the rest stays for pg', () => {
    expect(parseConnectionString('postgresql://u:p%40x@h1:5432,h2,[::1]:6000/db?target_session_attrs=primary&sslmode=disable')).toEqual({
      connectionString: 'postgresql://u:p%40x@h1:5432/db?sslmode=disable',
      batonHosts: {
        hosts: [
          { host: 'h1', port: 5432 },
          { host: 'h2', port: 5432 },
          { host: '::1', port: 6000 },
        ],
        target: 'primary',
      },
    });
    expect((parseConnectionString('postgres://u@h1,h2/db') as MultiHostConfig).batonHosts).toEqual({
      hosts: [
        { host: 'h1', port: 5432 },
        { host: 'h2', port: 5432 },
      ],
      target: 'read-write',
    });
  });

  it('refuses a bad host or target, naming the setting and never the password', () => {
    const bad = (url: string) => {
      try {
        parseConnectionString(url, 'DATABASE_URL');
      } catch (err) {
        expect(err).toBeInstanceOf(ConnectionStringError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(bad('postgres://u:secret@h1:5432,:5433/db')).toMatch(/^DATABASE_URL: bad host ":5433"/);
    expect(bad('postgres://u:secret@h1:99999,h2/db')).toMatch(/^DATABASE_URL: bad host "h1:99999": port must be 1-65535/);
    expect(bad('postgres://u:secret@h1,h2/db?target_session_attrs=standby')).toMatch(
      /^DATABASE_URL: target_session_attrs must be read-write, primary or any/,
    );
    expect(bad('postgres://u:secret@h1,h2/db?target_session_attrs=standby')).not.toContain('secret');
    // An unencoded '/' or '#' in the password ends the user info early: the "host" is the password's start.
    for (const url of [
      'postgres://app:Xk93jfQ/Lq9@h1,h2/db?target_session_attrs=read-write',
      'postgres://app:Xk93jfQ#Lq9@h1,h2/db?target_session_attrs=read-write',
    ]) {
      const message = bad(url);
      expect(message).toMatch(/^DATABASE_URL: cannot read the hosts: percent-encode/);
      expect(message).not.toContain('Xk93jf');
    }
  });

  it('createBaton and the daemon refuse a bad one as INVALID_CONFIG naming the option', () => {
    expect(() => createBaton({ connectionString: 'postgres://u@h1,h2:x/db', handlers: {} })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringContaining('connectionString: bad host "h2:x"') }),
    );
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:pw@h1,h2/db?target_session_attrs=prefer-standby' })).toThrow(
      /DATABASE_URL.*target_session_attrs must be read-write, primary or any.*\(got "\*\*\*"\)/,
    );
    // `baton keys` opens the key store alone: the same refusals, as INVALID_CONFIG BatonErrors.
    for (const [connectionString, pooler, why] of [
      ['postgres://u@h1,h2:x/db', 'none', 'connectionString: bad host "h2:x"'],
      ['postgres://u@h1,h2/db', 'transaction', "pooler: 'transaction'"],
    ] as const) {
      let thrown: unknown;
      try {
        openApiKeys({ connectionString, pooler });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(BatonError);
      expect(thrown).toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining(why) });
    }
    expect(loadConfig({ DATABASE_URL: 'postgres://u:pw@h1:5432,h2:5433/db?target_session_attrs=read-write' }).databaseUrl).toBe(
      'postgres://u:pw@h1:5432,h2:5433/db?target_session_attrs=read-write',
    );
  });
});

// A machine that cannot start private clusters skips this, saying so.
const unavailable = clusterUnavailable();
if (unavailable) console.warn(`test/failover/multi-host.test.ts: skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('a writable host among a primary and a standby', () => {
  let primary: PgCluster;
  let standby: PgCluster;
  usePrimaryAndStandby((p, s) => {
    primary = p;
    standby = s;
  });

  /** Standby listed first: a writable-only session must skip it. */
  const url = () => `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/postgres?target_session_attrs=read-write`;
  const portOf = async (pool: ReturnType<typeof openPool>) =>
    (await pool.query<{ port: number; recovery: boolean }>('SELECT inet_server_port() AS port, pg_is_in_recovery() AS recovery')).rows[0];

  it('connects past the standby to the primary: pools and single clients', async () => {
    const pool = openPool({ ...parseConnectionString(url()), max: 3 });
    try {
      const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
      for (const c of clients) {
        const r = await c.query<{ port: number; recovery: boolean }>('SELECT inet_server_port() AS port, pg_is_in_recovery() AS recovery');
        expect(r.rows[0]).toEqual({ port: primary.port, recovery: false });
        c.release();
      }
    } finally {
      await pool.end();
    }
    const client = newClient(parseConnectionString(url()));
    await client.connect();
    expect((await client.query('SELECT inet_server_port() AS port')).rows[0].port).toBe(primary.port);
    await client.end();
    // target any takes the first host, the standby.
    const any = newClient(parseConnectionString(url().replace('read-write', 'any')));
    await any.connect();
    expect((await any.query('SELECT pg_is_in_recovery() AS r')).rows[0].r).toBe(true);
    await any.end();
  });

  it('with no writable host, connect fails naming each host, never a session on the standby', async () => {
    const onlyStandby = `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:1/postgres`;
    const client = newClient(parseConnectionString(onlyStandby));
    const err = await client.connect().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NoPrimaryError);
    expect((err as NoPrimaryError).errors).toHaveLength(2);
    expect((err as Error).message).toContain(`127.0.0.1:${standby.port},127.0.0.1:1`);
    expect(translatePgError(err).code).toBe('DB_UNAVAILABLE');
  });

  it('after the standby is promoted and the primary stopped, a pool that had sessions on the primary reaches the new one', async () => {
    const pool = openPool({ ...parseConnectionString(url()), max: 2 });
    try {
      expect(await portOf(pool)).toEqual({ port: primary.port, recovery: false });
      await standby.promote();
      await primary.stopImmediate();
      // The dead sessions fail their statement; the pool drops them and new ones find the promoted standby.
      const after = await waitFor(() => portOf(pool), { timeoutMs: 20_000, message: 'a statement on the promoted standby' });
      expect(after).toEqual({ port: standby.port, recovery: false });
    } finally {
      await pool.end();
    }
  });
});
