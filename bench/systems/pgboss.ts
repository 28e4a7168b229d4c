// pg-boss adapter (v12): createQueue + insert for bulk, send for the producer, one work()
// registration with the variant's options (constructor, queue and work() options apart).

import pg from 'pg';
import { type ConstructorOptions, PgBoss, type Queue, type WorkOptions } from 'pg-boss';
import { checkExecutions, type OnJob, type ProducerSide, QUEUE, type Variant, type WorkerSide } from './types.ts';

interface PgBossOptions {
  constructor?: ConstructorOptions;
  queue?: Omit<Queue, 'name'>;
  work?: WorkOptions;
}

export function pgBossWorker(connectionString: string, v: Variant): WorkerSide {
  const o = v.options as PgBossOptions;
  const boss = new PgBoss({ connectionString, ...o.constructor });
  boss.on('error', () => undefined);
  const pool = new pg.Pool({ connectionString, max: 2 });
  pool.on('error', () => undefined);
  return {
    async setup() {
      await boss.start();
      await boss.createQueue(QUEUE, o.queue ?? {});
    },
    async enqueueBulk(seqs) {
      for (let i = 0; i < seqs.length; i += 1000) {
        await boss.insert(
          QUEUE,
          seqs.slice(i, i + 1000).map((seq) => ({ data: { seq } })),
        );
      }
    },
    async start(onJob: OnJob) {
      await boss.work<{ seq: number }>(QUEUE, o.work ?? {}, async (jobs) => {
        for (const job of jobs) await onJob(job.data.seq, 1);
      });
    },
    async stop() {
      await boss.offWork(QUEUE);
    },
    async countDone() {
      const r = await pool.query<{ n: string }>("select count(*) as n from pgboss.job where name = $1 and state = 'completed'", [QUEUE]);
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
      await boss.stop({ graceful: false });
      await pool.end();
    },
  };
}

export function pgBossProducer(connectionString: string): ProducerSide {
  // Producer only: no maintenance, no schedules; the queue's notify setting makes its send()s wake the workers.
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
      await boss.stop({ graceful: false });
    },
  };
}
