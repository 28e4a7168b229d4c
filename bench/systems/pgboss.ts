// pg-boss adapter (v10): createQueue + insert for bulk, send for the producer, one
// work() subscription with the variant's polling interval.

import PgBoss from 'pg-boss';
import pg from 'pg';
import { checkExecutions, QUEUE, type OnJob, type ProducerSide, type Variant, type WorkerSide } from './types.ts';

export function pgBossWorker(connectionString: string, v: Variant): WorkerSide {
  const boss = new PgBoss({ connectionString, ...(v.options as object) });
  boss.on('error', () => undefined);
  const pool = new pg.Pool({ connectionString, max: 2 });
  pool.on('error', () => undefined);
  return {
    async setup() {
      await boss.start();
      await boss.createQueue(QUEUE);
    },
    async enqueueBulk(seqs) {
      for (let i = 0; i < seqs.length; i += 1000) {
        await boss.insert(seqs.slice(i, i + 1000).map((seq) => ({ name: QUEUE, data: { seq } })));
      }
    },
    async start(onJob: OnJob) {
      await boss.work<{ seq: number }>(QUEUE, async (jobs) => {
        for (const job of jobs) await onJob(job.data.seq, 1);
      });
    },
    async stop() {
      await boss.offWork(QUEUE);
    },
    async countDone() {
      const r = await pool.query<{ n: string }>("select count(*) as n from pgboss.job where name = $1 and state = 'completed'", [
        QUEUE,
      ]);
      return Number(r.rows[0]!.n);
    },
    async verify(executed, total) {
      const r = await pool.query<{ seq: number; state: string; retry_count: number }>(
        "select (data->>'seq')::int as seq, state, retry_count from pgboss.job where name = $1",
        [QUEUE],
      );
      const doneSeqs = new Set(r.rows.filter((x) => x.state === 'completed').map((x) => x.seq));
      const bad = r.rows.filter((x) => x.state === 'failed' || x.retry_count > 0).length;
      const problems: string[] = [];
      if (r.rows.length !== total) problems.push(`${r.rows.length} rows for ${total} enqueued`);
      if (bad > 0) problems.push(`${bad} job(s) failed or retried`);
      const mismatch = checkExecutions(executed, doneSeqs);
      if (mismatch) problems.push(mismatch);
      return {
        ok: problems.length === 0,
        done: doneSeqs.size,
        remaining: r.rows.length - doneSeqs.size,
        detail: problems.join('; ') || 'ok',
      };
    },
    async close() {
      await boss.stop({ graceful: false, wait: true });
      await pool.end();
    },
  };
}

export function pgBossProducer(connectionString: string): ProducerSide {
  const boss = new PgBoss({ connectionString, supervise: false, schedule: false });
  boss.on('error', () => undefined);
  return {
    async open() {
      await boss.start();
    },
    async enqueue(seq) {
      await boss.send(QUEUE, { seq });
    },
    async close() {
      await boss.stop({ graceful: false, wait: true });
    },
  };
}
