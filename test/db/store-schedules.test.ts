// Conformance of the schedules store (PgScheduleStore) on a real database, method by method:
// upsert (create, unchanged, changed), get scoped by tenant, list, update and disable
// conditional on the version, remove and remove-except, the due read and the earliest fire
// time, and the change NOTIFY. The ticker's conditional advance is in test/cron/scheduler.test.ts.

import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { PgScheduleStore } from '../../src/db/pg/pg-schedules.ts';
import { cronChannelFor } from '../../src/driver/channels.ts';
import type { ScheduleWrite } from '../../src/driver/schedule-store.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();
let store: PgScheduleStore;
beforeAll(() => {
  store = new PgScheduleStore(db.pool, quoteSchema(db.schema), cronChannelFor(db.schema));
});

let seq = 0;
const T = Date.parse('2030-01-01T00:00:00Z');
function write(over: Partial<ScheduleWrite> = {}): ScheduleWrite {
  return {
    tenantId: 'default',
    name: `s${++seq}`,
    cron: '* * * * *',
    timezone: 'UTC',
    jobType: 't',
    workflow: null,
    queue: 'q',
    payload: { n: seq },
    priority: 0,
    maxAttempts: null,
    misfirePolicy: 'fire_once',
    catchUpLimit: 10,
    nextFireAt: new Date(T),
    ...over,
  };
}
const without = ({ tenantId: _t, name: _n, ...rest }: ScheduleWrite) => rest;

describe('PgScheduleStore', () => {
  it('scheduleUpsert creates, writes nothing for the same definition, and updates a changed one', async () => {
    const w = write();
    const first = await store.scheduleUpsert(w);
    expect(first).toMatchObject({ created: true, changed: true, schedule: { name: w.name, status: 'enabled', cron: '* * * * *' } });
    const same = await store.scheduleUpsert(w);
    expect(same).toMatchObject({ created: false, changed: false });
    expect(same.schedule.version).toBe(first.schedule.version);
    const changed = await store.scheduleUpsert({ ...w, cron: '*/5 * * * *' });
    expect(changed).toMatchObject({ created: false, changed: true, schedule: { id: first.schedule.id, cron: '*/5 * * * *' } });
    expect(changed.schedule.version).not.toBe(first.schedule.version);
  });

  it('scheduleGet is scoped by tenant; scheduleList pages by tenant', async () => {
    const tenant = `t${++seq}`;
    const a = (await store.scheduleUpsert(write({ tenantId: tenant }))).schedule;
    const b = (await store.scheduleUpsert(write({ tenantId: tenant }))).schedule;
    await store.scheduleUpsert(write({ tenantId: `other${seq}` }));
    expect((await store.scheduleGet(a.id))?.id).toBe(a.id);
    expect((await store.scheduleGet(a.id, tenant))?.id).toBe(a.id);
    expect(await store.scheduleGet(a.id, 'someone-else')).toBeNull();
    expect(await store.scheduleGet('999999999')).toBeNull();
    const all = await store.scheduleList({ tenantId: tenant, limit: 10, offset: 0 });
    expect(all.map((s) => s.id).sort()).toEqual([a.id, b.id].sort());
    const page = await store.scheduleList({ tenantId: tenant, limit: 1, offset: 1 });
    expect(page).toHaveLength(1);
    expect(all.map((s) => s.id)).toContain(page[0]!.id);
  });

  it('scheduleUpdate and scheduleDisable write only under the current version', async () => {
    const s = (await store.scheduleUpsert(write())).schedule;
    const paused = await store.scheduleUpdate({
      id: s.id,
      version: s.version,
      write: without(write({ nextFireAt: null })),
      enabled: false,
    });
    expect(paused).toMatchObject({ id: s.id, status: 'paused', nextFireAt: null });
    expect(await store.scheduleUpdate({ id: s.id, version: s.version, write: without(write()), enabled: true })).toBeNull();
    expect(await store.scheduleDisable({ id: s.id, version: s.version, reason: 'stale' })).toBe(false);
    expect(await store.scheduleDisable({ id: s.id, version: paused!.version, reason: 'bad zone' })).toBe(true);
    expect(await store.scheduleGet(s.id)).toMatchObject({ status: 'disabled', disabledReason: 'bad zone' });
  });

  it('scheduleListDue answers enabled schedules due by then, earliest first; scheduleEarliestFire their first time', async () => {
    for (const s of await store.scheduleList({ limit: 1_000, offset: 0 })) await store.scheduleRemove(s.id);
    expect(await store.scheduleEarliestFire()).toBeNull();
    const late = (await store.scheduleUpsert(write({ nextFireAt: new Date(T + 60_000) }))).schedule;
    const early = (await store.scheduleUpsert(write({ nextFireAt: new Date(T) }))).schedule;
    const off = (await store.scheduleUpsert(write({ nextFireAt: new Date(T - 60_000) }))).schedule;
    await store.scheduleUpdate({ id: off.id, version: off.version, write: without(write({ nextFireAt: null })), enabled: false });
    expect((await store.scheduleEarliestFire())?.getTime()).toBe(T);
    expect((await store.scheduleListDue({ now: new Date(T + 60_000), limit: 10 })).map((s) => s.id)).toEqual([early.id, late.id]);
    expect((await store.scheduleListDue({ now: new Date(T + 60_000), limit: 1 })).map((s) => s.id)).toEqual([early.id]);
    expect(await store.scheduleListDue({ now: new Date(T - 1), limit: 10 })).toEqual([]);
  });

  it('scheduleRemove deletes one; scheduleRemoveExcept every schedule not named, answering how many', async () => {
    for (const s of await store.scheduleList({ limit: 1_000, offset: 0 })) await store.scheduleRemove(s.id);
    const keep = (await store.scheduleUpsert(write({ tenantId: 'acme' }))).schedule;
    const gone = (await store.scheduleUpsert(write())).schedule;
    await store.scheduleUpsert(write());
    expect(await store.scheduleRemove(gone.id)).toBe(true);
    expect(await store.scheduleRemove(gone.id)).toBe(false);
    expect(await store.scheduleRemoveExcept([{ tenantId: 'acme', name: keep.name }])).toBe(1);
    expect((await store.scheduleList({ limit: 10, offset: 0 })).map((s) => s.id)).toEqual([keep.id]);
  });

  it("a workflow schedule's job type stays workflow:<name>, whoever writes the row (an older process's edit is refused)", async () => {
    const ok = await store.scheduleUpsert(write({ workflow: 'bill', jobType: 'workflow:bill' }));
    await expect(
      db.query(`UPDATE ${quoteSchema(db.schema)}.schedules SET job_type = 'other' WHERE id = $1`, [ok.schedule.id]),
    ).rejects.toMatchObject({ code: '23514', constraint: 'schedules_workflow_job_type' });
    await expect(store.scheduleUpsert(write({ workflow: 'bill', jobType: 'bill' }))).rejects.toThrow(/schedules_workflow_job_type|check/i);
  });

  it('scheduleNotifyChanged notifies the cron channel', async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    try {
      const heard = new Promise<string>((resolve) => listener.on('notification', (n) => resolve(n.channel)));
      await listener.query(`LISTEN "${cronChannelFor(db.schema)}"`);
      await store.scheduleNotifyChanged();
      expect(await heard).toBe(cronChannelFor(db.schema));
    } finally {
      await listener.end();
    }
  });
});
