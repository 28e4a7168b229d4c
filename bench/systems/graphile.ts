// graphile-worker adapter: run() with a task list, addJobs for bulk enqueue, quickAddJob
// style addJob for the producer. Finished jobs are deleted, so "done" = enqueued - remaining.

import { Logger, makeWorkerUtils, type Runner, run, runMigrations, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { checkExecutions, JOB_TYPE, type OnJob, type ProducerSide, type Variant, type WorkerSide } from './types.ts';

const quiet = new Logger(() => () => undefined);

/** The variant's options are graphile-worker's own `preset.worker` settings, handed over as they are. */
function preset(connectionString: string, v: Variant) {
  return { worker: { connectionString, ...v.options } };
}

export function graphileWorker(connectionString: string, v: Variant): WorkerSide {
  let runner: Runner | null = null;
  let utils: WorkerUtils | null = null;
  const pool = new pg.Pool({ connectionString, max: 2 });
  pool.on('error', () => undefined);
  const remaining = async () =>
    Number((await pool.query<{ n: string }>('select count(*) as n from graphile_worker._private_jobs')).rows[0]!.n);
  return {
    async setup() {
      await runMigrations({ connectionString, logger: quiet });
      utils = await makeWorkerUtils({ connectionString, logger: quiet });
    },
    async enqueueBulk(seqs) {
      for (let i = 0; i < seqs.length; i += 1000) {
        const chunk = seqs.slice(i, i + 1000).map((seq) => ({ identifier: JOB_TYPE, payload: { seq } }));
        await utils!.addJobs(chunk);
      }
    },
    async start(onJob: OnJob) {
      runner = await run({
        preset: preset(connectionString, v),
        logger: quiet,
        noHandleSignals: true,
        taskList: {
          [JOB_TYPE]: async (payload, helpers) => {
            await onJob((payload as { seq: number }).seq, helpers.job.attempts);
          },
        },
      });
    },
    async stop() {
      await runner?.stop();
      runner = null;
    },
    async countDone(total) {
      return total - (await remaining());
    },
    async verify(executed, total) {
      const left = await remaining();
      const failed = Number(
        (await pool.query<{ n: string }>('select count(*) as n from graphile_worker._private_jobs where last_error is not null')).rows[0]!
          .n,
      );
      const done = total - left;
      // Rows are deleted on success, so the executed set is checked for size and uniqueness.
      const unique = new Set(executed);
      const problems: string[] = [];
      if (failed > 0) problems.push(`${failed} job(s) failed`);
      if (unique.size !== executed.length) problems.push('a job executed more than once');
      if (done !== unique.size) problems.push(`database shows ${done} done, handlers ran ${unique.size}`);
      return { ok: problems.length === 0, done, remaining: left, detail: problems.join('; ') || 'ok' };
    },
    async close() {
      await utils?.release();
      await pool.end();
    },
  };
}

export function graphileProducer(connectionString: string): ProducerSide {
  let utils: WorkerUtils | null = null;
  return {
    async open() {
      utils = await makeWorkerUtils({ connectionString, logger: quiet });
    },
    async enqueue(seq) {
      await utils!.addJob(JOB_TYPE, { seq });
    },
    async close() {
      await utils?.release();
    },
  };
}

export { checkExecutions };
