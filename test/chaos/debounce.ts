// The debounce chaos scenario: producers stream trailing-debounced enqueues over a dozen keys
// (bursts with quiet gaps, so windows close and workers claim mid-stream, racing the folds)
// while workers are killed (kill -9), the producers' connections are terminated mid-enqueue
// (their crash, as the server sees it) and PostgreSQL restarts once. A sampler watches for two
// unclaimed pending jobs of one key; debounce-checker.ts then proves from the table and the acks
// that every acknowledged payload, or a later one of its key, ran.

import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Baton, createBaton } from '../../src/index.ts';
import { checkDebounce, type DebounceAck, type DebounceCheck, type DebounceJob } from './debounce-checker.ts';
import { prng } from './fault-proxy.ts';
import { Harness } from './harness.ts';

const KEYS = 12;
const PRODUCERS = 3;
const STREAM_MS = 20_000;
const WINDOW_MS = 300;
const MAX_WAIT_MS = 1_000;
const DRAIN_DEADLINE_MS = 60_000;
const APP = 'chaos-debounce-producer';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface DebounceRunResult {
  ok: boolean;
  check: DebounceCheck;
  violations: string[];
  unknown: number;
  samples: number;
}

export async function runDebounceScenario(o: { seed: number; useNetns: boolean }): Promise<DebounceRunResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-chaos-debounce-${o.seed}-`));
  console.log(
    `\n=== chaos debounce: ${KEYS} keys, trailing window ${WINDOW_MS} ms (max wait ${MAX_WAIT_MS} ms), ${PRODUCERS} producers, workers killed, producer sessions terminated, one PostgreSQL restart; history=${dir}`,
  );
  const h = new Harness({ dir, seed: o.seed, workers: 3, concurrency: 4, leaseMs: 2_000, useNetns: o.useNetns });
  const violations: string[] = [];
  const random = prng(o.seed);
  const acks: DebounceAck[] = [];
  const doublePending: Array<{ at: number; key: string; n: number }> = [];
  let unknown = 0;
  let samples = 0;
  try {
    await h.setup();
    await h.startFleet();
    const url = new URL(h.cluster.url());
    url.searchParams.set('application_name', APP);
    const producers: Baton[] = Array.from({ length: PRODUCERS }, () =>
      createBaton({ connectionString: url.toString(), poolSize: 3, queryTimeoutMs: 3_000 }),
    );
    for (const p of producers) p.events.on('error', () => undefined);
    const enqueue = (key: number, seq: number) =>
      producers[key % PRODUCERS]!.enqueue({
        queue: 'chaos',
        jobType: 'chaos',
        payload: { ms: 20, key: `k${key}`, seq },
        maxAttempts: 100,
        debounce: { key: `k${key}`, windowMs: WINDOW_MS, maxWaitMs: MAX_WAIT_MS },
      });
    const seqs = new Array<number>(KEYS).fill(0);
    const send = async (key: number): Promise<boolean> => {
      const seq = ++seqs[key]!;
      try {
        const r = await enqueue(key, seq);
        acks.push({ key: `k${key}`, seq, jobId: r.job.id });
        return true;
      } catch {
        // Unknown outcome (the session was terminated, PostgreSQL restarting): nothing is owed.
        unknown++;
        return false;
      }
    };
    try {
      let streaming = true;
      const t0 = Date.now();
      // One sequential stream per key: its seqs commit in order, so "a later payload" is well defined.
      const streams = Array.from({ length: KEYS }, async (_, key) => {
        while (streaming) {
          await send(key);
          // Mostly within the window (folds), now and then a gap that lets the window close.
          await sleep(random() < 0.15 ? WINDOW_MS + random() * 600 : 20 + random() * 120);
        }
      });
      const sampler = (async () => {
        while (streaming) {
          try {
            const r = await h.admin.query<{ key: string; n: number }>(
              `SELECT payload->>'key' AS key, count(*)::int AS n FROM baton.jobs
                WHERE queue = 'chaos' AND state = 'pending' AND lease_token IS NULL GROUP BY 1 HAVING count(*) > 1`,
            );
            samples++;
            for (const row of r.rows) doublePending.push({ at: Date.now(), key: row.key, n: row.n });
          } catch {
            // PostgreSQL restarting.
          }
          await sleep(50);
        }
      })();
      // Faults on a fixed timeline, each started at its time whatever the previous one still
      // does (a killed worker's respawn takes seconds on a busy machine).
      const plan: Array<[number, 'kill' | 'terminate' | 'pg-restart']> = [
        [2_000, 'kill'],
        [4_000, 'terminate'],
        [6_000, 'kill'],
        [8_000, 'terminate'],
        [10_000, 'pg-restart'],
        [13_000, 'terminate'],
        [14_000, 'kill'],
        [16_000, 'terminate'],
        [17_000, 'kill'],
      ];
      let next = 0;
      const respawning = new Set<number>();
      const faults = Promise.all(
        plan.map(async ([ms, kind]) => {
          await sleep(ms - (Date.now() - t0));
          const at = ((Date.now() - t0) / 1000).toFixed(1);
          if (kind === 'pg-restart') {
            console.log(`    t=${at}s PostgreSQL restart`);
            await h.pgRestart();
          } else if (kind === 'terminate') {
            const r = await h.admin
              .query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [APP])
              .catch(() => ({ rowCount: 0 }));
            console.log(`    t=${at}s terminated ${r.rowCount} producer session(s)`);
          } else {
            // A slot whose worker is still respawning from an earlier kill is left alone.
            const order = h.slots.map((_, i) => h.slots[(next + i) % h.slots.length]!);
            const slot = order.find((sl) => !respawning.has(sl.index));
            next++;
            if (!slot) return;
            console.log(`    t=${at}s kill -9 worker ${slot.workerId}`);
            respawning.add(slot.index);
            try {
              await h.kill(slot);
            } finally {
              respawning.delete(slot.index);
            }
          }
        }),
      );
      await faults;
      await sleep(Math.max(0, STREAM_MS - (Date.now() - t0)));
      streaming = false;
      await Promise.all([...streams, sampler]);
      // The last enqueue of every key is acknowledged: retried (with a new seq) until it is.
      for (let key = 0; key < KEYS; key++) {
        for (let tries = 0; !(await send(key)); tries++) {
          if (tries > 20) throw new Error(`key k${key}: no acknowledged last enqueue`);
          await sleep(200);
        }
      }
      const deadline = Date.now() + DRAIN_DEADLINE_MS;
      while ((await unfinished(h)) > 0) {
        if (Date.now() > deadline) {
          violations.push(`drain: jobs unfinished ${DRAIN_DEADLINE_MS} ms after the stream ended`);
          break;
        }
        await sleep(100);
      }
      const final = await h.admin.query<{ key: string; n: number }>(
        `SELECT payload->>'key' AS key, count(*)::int AS n FROM baton.jobs
          WHERE queue = 'chaos' AND state = 'pending' AND lease_token IS NULL GROUP BY 1 HAVING count(*) > 1`,
      );
      for (const row of final.rows) doublePending.push({ at: Date.now(), key: row.key, n: row.n });
      const check = checkDebounce({ acks, jobs: await jobsOf(h), doublePending });
      violations.push(...check.violations);
      if (check.folded === 0) violations.push('vacuous: no enqueue was folded into a pending job');
      for (const c of h.crashes) violations.push(`crash: worker ${c} exited without being killed or stopped`);
      console.log(
        `    acknowledged enqueues: ${check.acks} (folded ${check.folded}), unknown outcomes: ${unknown}, jobs: ${check.jobs}, pending samples: ${samples}`,
      );
      for (const v of violations.slice(0, 20)) console.log(`    VIOLATION ${v}`);
      console.log(violations.length === 0 ? '    debounce: VALID' : `    debounce: INVALID (${violations.length})`);
      return { ok: violations.length === 0, check, violations, unknown, samples };
    } finally {
      await h.stopWorkers().catch(() => undefined);
      await Promise.all(producers.map((p) => p.stop()));
    }
  } finally {
    await h.teardown();
  }
}

async function unfinished(h: Harness): Promise<number> {
  const r = await h.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM baton.jobs WHERE queue = 'chaos' AND state NOT IN ('succeeded','dead_lettered','cancelled')`,
  );
  return r.rows[0]!.n;
}

async function jobsOf(h: Harness): Promise<DebounceJob[]> {
  const r = await h.admin.query<{ id: string; state: string; key: string; seq: number; ran: number | null }>(
    `SELECT id::text, state, payload->>'key' AS key, (payload->>'seq')::int AS seq, (result->>'seq')::int AS ran
       FROM baton.jobs WHERE queue = 'chaos' ORDER BY id`,
  );
  return r.rows.map((j) => ({ id: j.id, state: j.state, key: j.key, seq: j.seq, ranSeq: j.ran }));
}
