// `baton keys create|list|revoke` through bin/baton.js in a child process, on this file's
// database: create prints the token once, list shows no secret, revoke marks the key.

import { describe, expect, it } from 'vitest';
import { EXIT_CONFIG, EXIT_FAILED } from '../../src/daemon/shutdown.ts';
import { runBaton, waitExit } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();

async function run(args: string[]) {
  const p = runBaton(['keys', ...args], { DATABASE_URL: db.url });
  const code = await waitExit(p, 30_000);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('baton keys', () => {
  it('creates a tenant key, lists it without its secret, and revokes it', async () => {
    const created = await run(['create', '--tenant', 'acme', '--name', 'ci deploys']);
    expect(created.code, created.stderr).toBe(0);
    const { key, token } = JSON.parse(created.stdout) as { key: { id: string; role: string; tenantId: string }; token: string };
    expect(key).toMatchObject({ role: 'tenant', tenantId: 'acme', name: 'ci deploys' });
    expect(token.startsWith(`bk_${key.id}_`)).toBe(true);
    expect(created.stderr).toContain('not shown again');

    const listed = await run(['list', '--tenant', 'acme']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).not.toContain(token.slice(`bk_${key.id}_`.length));
    expect((JSON.parse(listed.stdout) as { keys: Array<{ id: string }> }).keys.map((k) => k.id)).toEqual([key.id]);

    const revoked = await run(['revoke', key.id]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout).key.revokedAt).toEqual(expect.any(String));
    const row = await db.query(`SELECT revoked_at FROM ${db.schema}.api_keys WHERE id = $1`, [key.id]);
    expect(row.rows[0].revoked_at).toBeInstanceOf(Date);
    expect(JSON.parse((await run(['list'])).stdout).keys).toEqual([]);
    expect(JSON.parse((await run(['list', '--all'])).stdout).keys).toHaveLength(1);
  });

  it('creates an admin key', async () => {
    const r = await run(['create', '--role', 'admin']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).key).toMatchObject({ role: 'admin', tenantId: null });
  });

  it.each([
    [[], EXIT_CONFIG, 'needs a subcommand'],
    [['create'], EXIT_CONFIG, 'a tenant key needs a tenantId'],
    [['create', '--role', 'admin', '--tenant', 'acme'], EXIT_CONFIG, 'give no tenantId'],
    [['create', '--role', 'root', '--tenant', 'acme'], EXIT_CONFIG, '--role'],
    [['revoke'], EXIT_CONFIG, 'needs the key id'],
    [['list', '--name', 'x'], EXIT_CONFIG, 'not a flag of baton keys list'],
    [['revoke', '0123456789abcdef'], EXIT_FAILED, 'not found'],
  ])('baton keys %j exits %i saying %s', async (args, code, message) => {
    const r = await run(args as string[]);
    expect(r.code).toBe(code);
    expect(r.stderr).toContain(message);
    expect(r.stdout).toBe('');
  });
});
