// The owner record of the embedded postmaster (no PostgreSQL needed): it names this
// process while it runs, and neither a dead process nor a later one that got the
// same pid passes for the owner.

import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { forgetOwner, ownerAlive, readOwner, recordOwner } from '../../src/daemon/embedded-owner.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'baton-owner-'));
  dirs.push(d);
  return d;
}

describe('embedded PostgreSQL owner record', () => {
  it('names this process, which is alive, until forgotten', async () => {
    const dir = await tempDir();
    expect(readOwner(dir)).toBeUndefined();
    recordOwner(dir, 4242);
    const owner = readOwner(dir)!;
    expect(owner).toMatchObject({ pid: process.pid, postmasterPid: 4242 });
    expect(ownerAlive(owner)).toBe(true);
    forgetOwner(dir);
    expect(readOwner(dir)).toBeUndefined();
  });

  it('a process that exited is not alive, nor is a pid whose start time differs (reused)', async () => {
    const child = spawn(process.execPath, ['-e', '']);
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    expect(ownerAlive({ pid, postmasterPid: 1 })).toBe(false);

    const dir = await tempDir();
    recordOwner(dir, 1);
    const me = readOwner(dir)!;
    expect(me.startTime).toMatch(/^\d+$/);
    expect(ownerAlive({ ...me, startTime: `${me.startTime}0` })).toBe(false);
  });

  it('ignores a file it cannot read as an owner', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'postmaster.owner'), 'not json');
    expect(readOwner(dir)).toBeUndefined();
  });
});
