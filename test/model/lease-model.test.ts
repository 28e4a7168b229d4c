// Model-based test of the lease protocol against the REAL SQL store (PgExecutor
// on a per-file database): random sequences of claim / mark-running / heartbeat
// / expire / reap / complete / fail / release / crash by several workers, each
// holding current or stale tokens. After every step the database is compared
// with a tiny model and the invariants are checked. A deliberately unfenced
// store must be caught, so the check can fail.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import type { Executor, Lease } from '../../src/driver/executor.ts';
import type { JobState } from '../../src/types/job.ts';
import { type TestDatabase, useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase({ poolSize: 2 });

const NJOBS = 2;
const WORKERS = ['a', 'b', 'c'] as const;
const MAX_ATTEMPTS = 4;
const LIVE: readonly JobState[] = ['leased', 'running'];
/** Transitions the job state machine allows; anything else is a violation. */
const ALLOWED = new Set([
  'pending>leased',
  'pending>running',
  'leased>running',
  'leased>pending',
  'running>pending',
  'leased>succeeded',
  'running>succeeded',
  'leased>dead_lettered',
  'running>dead_lettered',
]);

interface ModelJob {
  state: JobState;
  token: bigint | null;
  attempt: number;
  expired: boolean;
}
interface Model {
  jobs: Map<string, ModelJob>;
  /** What each worker believes it holds: job id -> token (may be stale: zombies keep beliefs). */
  beliefs: Map<string, Map<string, bigint>>;
  /** Every token ever issued to each job, for stale writes. */
  issued: Map<string, bigint[]>;
  maxToken: bigint;
}
interface Real {
  ex: Executor;
  db: TestDatabase;
}

interface Row {
  id: string;
  state: JobState;
  lease_token: string | null;
  lease_owner: string | null;
  attempt: number;
  snapshot: string;
}

async function rows(d: TestDatabase): Promise<Map<string, Row>> {
  const r = await d.query<Row>(
    `SELECT id::text, state, lease_token::text, lease_owner, attempt, row_to_json(j)::text AS snapshot
     FROM baton.jobs j ORDER BY id`,
  );
  return new Map(r.rows.map((x) => [x.id, x]));
}

/** Checks the database against the model and the invariants. */
async function verify(m: Model, r: Real, before?: Map<string, Row>): Promise<Map<string, Row>> {
  const now = await rows(r.db);
  for (const [id, mj] of m.jobs) {
    const row = now.get(id)!;
    expect(row.state, `job ${id} state`).toBe(mj.state);
    expect(row.lease_token === null ? null : BigInt(row.lease_token), `job ${id} token`).toBe(mj.token);
    expect(row.attempt, `job ${id} attempt`).toBe(mj.attempt);
    const prev = before?.get(id);
    if (prev && prev.state !== row.state) {
      expect(ALLOWED.has(`${prev.state}>${row.state}`), `transition ${prev.state}>${row.state}`).toBe(true);
    }
    // At most one worker holds the CURRENT token of a live lease.
    if (LIVE.includes(row.state)) {
      const holders = [...m.beliefs.values()].filter((b) => b.get(id) === BigInt(row.lease_token!)).length;
      expect(holders, `live lease holders of job ${id}`).toBeLessThanOrEqual(1);
    }
  }
  return now;
}

/** A write fenced off must leave the row byte-for-byte unchanged. */
function expectUnchanged(before: Map<string, Row>, after: Map<string, Row>, ids: string[]): void {
  for (const id of ids) expect(after.get(id)!.snapshot, `stale write changed job ${id}`).toBe(before.get(id)!.snapshot);
}

const isCurrent = (m: Model, id: string, token: bigint) => {
  const j = m.jobs.get(id)!;
  return LIVE.includes(j.state) && j.token === token;
};

type Cmd = fc.AsyncCommand<Model, Real>;

class Claim implements Cmd {
  constructor(
    readonly w: string,
    readonly intoRunning: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const before = await rows(r.db);
    // Time passes until every backoff is due, so the model knows what is claimable.
    await r.db.query(`UPDATE baton.jobs SET run_at = now() - interval '1 second' WHERE state = 'pending'`);
    const got = await r.ex.jobClaim({ queue: 'q', limit: 1, owner: this.w, leaseMs: 60_000, intoRunning: this.intoRunning });
    const pending = [...m.jobs].filter(([, j]) => j.state === 'pending').map(([id]) => id);
    expect(got.length).toBe(pending.length > 0 ? 1 : 0);
    for (const job of got) {
      expect(pending).toContain(job.id);
      const t = BigInt(job.token);
      expect(t > m.maxToken, 'tokens strictly increase').toBe(true);
      m.maxToken = t;
      const mj = m.jobs.get(job.id)!;
      Object.assign(mj, { state: this.intoRunning ? 'running' : 'leased', token: t, attempt: mj.attempt + 1, expired: false });
      m.beliefs.get(this.w)!.set(job.id, t);
      m.issued.get(job.id)!.push(t);
    }
    await verify(m, r, before);
  }
  toString = () => `claim(${this.w}${this.intoRunning ? ',running' : ''})`;
}

/** Picks a (job, token) the worker believes in, or a stale token of any job. */
function leaseFor(m: Model, w: string, pick: number, stale: boolean): Lease | undefined {
  if (stale) {
    const all = [...m.issued].flatMap(([id, ts]) => ts.map((t) => ({ id, token: t.toString() })));
    return all.length ? all[pick % all.length] : undefined;
  }
  const held = [...m.beliefs.get(w)!];
  if (!held.length) return undefined;
  const [id, t] = held[pick % held.length]!;
  return { id, token: t.toString() };
}

class Outcome implements Cmd {
  constructor(
    readonly w: string,
    readonly kind: 'complete' | 'fail' | 'terminal' | 'release' | 'markRunning',
    readonly pick: number,
    readonly stale: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const lease = leaseFor(m, this.w, this.pick, this.stale);
    if (!lease) return;
    const before = await rows(r.db);
    const token = BigInt(lease.token);
    const mj = m.jobs.get(lease.id)!;
    const current = isCurrent(m, lease.id, token) && (this.kind !== 'markRunning' || mj.state === 'leased');
    let accepted: boolean;
    switch (this.kind) {
      case 'complete':
        accepted = (await r.ex.jobCompleteMany({ items: [{ ...lease, result: { by: this.w } }] })).has(lease.id);
        if (current) Object.assign(mj, { state: 'succeeded' });
        break;
      case 'fail':
      case 'terminal': {
        const out = await r.ex.jobFailMany({
          items: [
            {
              ...lease,
              terminal: this.kind === 'terminal',
              error: { attempt: mj.attempt, token: lease.token, kind: 'transient', name: 'E', message: 'x' },
            },
          ],
          backoffBaseMs: 1,
          backoffCapMs: 1,
        });
        accepted = out.has(lease.id);
        if (current) mj.state = this.kind === 'terminal' || mj.attempt >= MAX_ATTEMPTS ? 'dead_lettered' : 'pending';
        break;
      }
      case 'release':
        accepted = (await r.ex.jobReleaseMany({ leases: [lease], refundAttempt: true })).has(lease.id);
        if (current) Object.assign(mj, { state: 'pending', attempt: Math.max(0, mj.attempt - 1) });
        break;
      case 'markRunning':
        accepted = (await r.ex.jobMarkRunningMany({ leases: [lease] })).has(lease.id);
        if (current) mj.state = 'running';
        break;
    }
    expect(accepted, `${this.kind} with ${current ? 'current' : 'stale'} token`).toBe(current);
    if (this.kind !== 'markRunning') m.beliefs.get(this.w)!.delete(lease.id);
    const after = await verify(m, r, before);
    if (!accepted) expectUnchanged(before, after, [lease.id]);
  }
  toString = () => `${this.kind}(${this.w},#${this.pick}${this.stale ? ',stale' : ''})`;
}

class Heartbeat implements Cmd {
  constructor(readonly w: string) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const held = [...m.beliefs.get(this.w)!].map(([id, t]) => ({ id, token: t.toString() }));
    if (!held.length) return;
    const before = await rows(r.db);
    const ok = (await r.ex.jobHeartbeatMany({ leases: held, leaseMs: 60_000 })).alive;
    for (const l of held) {
      const cur = isCurrent(m, l.id, BigInt(l.token));
      expect(ok.has(l.id), `heartbeat of job ${l.id}`).toBe(cur);
      if (cur) m.jobs.get(l.id)!.expired = false;
      // The engine forgets a lease missing from RETURNING.
      else m.beliefs.get(this.w)!.delete(l.id);
    }
    const after = await verify(m, r, before);
    expectUnchanged(
      before,
      after,
      held.filter((l) => !ok.has(l.id)).map((l) => l.id),
    );
  }
  toString = () => `heartbeat(${this.w})`;
}

/** The lease outlives its TTL (the holder is paused or partitioned). */
class Expire implements Cmd {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const id = [...m.jobs.keys()][this.pick % NJOBS]!;
    await r.db.query(
      `UPDATE baton.jobs SET lease_expires_at = now() - interval '1 millisecond' WHERE id = $1 AND state IN ('leased','running')`,
      [id],
    );
    const mj = m.jobs.get(id)!;
    if (LIVE.includes(mj.state)) mj.expired = true;
  }
  toString = () => `expire(#${this.pick})`;
}

class Reap implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    const before = await rows(r.db);
    const reaped = await r.ex.jobReap({ limit: 100, graceMs: 0, fastReclaim: false });
    const expected = [...m.jobs].filter(([, j]) => LIVE.includes(j.state) && j.expired).map(([id]) => id);
    expect(reaped.map((x) => x.id).sort()).toEqual(expected.sort());
    for (const id of expected) {
      const mj = m.jobs.get(id)!;
      Object.assign(mj, { state: mj.attempt >= MAX_ATTEMPTS ? 'dead_lettered' : 'pending', expired: false });
    }
    await verify(m, r, before);
  }
  toString = () => 'reap';
}

/** kill -9: the worker forgets everything; its leases stay until expiry. */
class Crash implements Cmd {
  constructor(readonly w: string) {}
  check = () => true;
  async run(m: Model) {
    m.beliefs.get(this.w)!.clear();
  }
  toString = () => `crash(${this.w})`;
}

const worker = fc.constantFrom(...WORKERS);
const commands = fc.commands(
  [
    fc.tuple(worker, fc.boolean()).map(([w, b]) => new Claim(w, b)),
    fc
      .tuple(worker, fc.constantFrom('complete', 'fail', 'terminal', 'release', 'markRunning' as const), fc.nat(8), fc.boolean())
      .map(([w, k, p, s]) => new Outcome(w, k, p, s)),
    worker.map((w) => new Heartbeat(w)),
    fc.nat(8).map((p) => new Expire(p)),
    fc.constant(new Reap()),
    worker.map((w) => new Crash(w)),
  ],
  { maxCommands: 30, size: 'max' },
);

async function setup(ex: Executor): Promise<{ model: Model; real: Real }> {
  await db.query('TRUNCATE baton.jobs');
  const maxToken = BigInt(
    (await db.query<{ t: string }>(`SELECT (CASE WHEN is_called THEN last_value ELSE 0 END)::text AS t FROM baton.lease_token_seq`))
      .rows[0]!.t,
  );
  const inserted = await ex.jobInsertMany({
    jobs: Array.from({ length: NJOBS }, () => ({
      tenantId: 'default',
      queue: 'q',
      jobType: 't',
      payload: {},
      traceContext: null,
      priority: 0,
      runAt: null,
      delayMs: null,
      maxAttempts: MAX_ATTEMPTS,
      idempotencyKey: null,
    })),
  });
  const jobs = new Map(inserted.map((r) => [r.job.id, { state: 'pending' as JobState, token: null, attempt: 0, expired: false }]));
  return {
    model: {
      jobs,
      beliefs: new Map(WORKERS.map((w) => [w, new Map()])),
      issued: new Map(inserted.map((r) => [r.job.id, []])),
      maxToken,
    },
    real: { ex, db },
  };
}

const RUNS = Number(process.env.LEASE_MODEL_RUNS ?? 100);

describe('lease protocol model vs. the SQL store', () => {
  it(`holds the invariants over ${RUNS} random histories`, async () => {
    const ex = new PgExecutor(db.pool, '"baton"');
    await fc.assert(
      fc.asyncProperty(commands, (cmds) => fc.asyncModelRun(() => setup(ex), cmds)),
      { numRuns: RUNS, seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined },
    );
  }, 120_000);

  it('catches an unfenced outcome write (the check can fail)', async () => {
    const real = new PgExecutor(db.pool, '"baton"');
    // The bug under test: complete without the lease_token condition.
    const jobCompleteMany = async (p: { items: Array<{ id: string }> }) => {
      const r = await db.query<{ id: string }>(
        `UPDATE baton.jobs SET state = 'succeeded', lease_owner = NULL, lease_expires_at = NULL, finished_at = now()
           WHERE id = ANY($1::bigint[]) AND state IN ('leased','running') RETURNING id::text`,
        [p.items.map((i) => i.id)],
      );
      return new Set(r.rows.map((x) => x.id));
    };
    const unfenced = new Proxy(real, {
      get(target, key) {
        if (key === 'jobCompleteMany') return jobCompleteMany;
        const v = Reflect.get(target, key) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Executor;
    const out = await fc.check(
      fc.asyncProperty(commands, (cmds) => fc.asyncModelRun(() => setup(unfenced), cmds)),
      { numRuns: 500, seed: 42, endOnFailure: true },
    );
    expect(out.failed).toBe(true);
  }, 120_000);
});
