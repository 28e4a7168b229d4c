// A runnable tour of the library: migrate, enqueue (plain, delayed, idempotent,
// inside your own transaction), run handlers, read the outcome, stop cleanly.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx examples/quickstart.ts

import pg from 'pg';
import { createBaton, type Handler, TerminalError } from '../src/index.ts';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const sendEmail: Handler<{ to: string }> = async (ctx) => {
  if (!ctx.payload.to.includes('@')) throw new TerminalError(`bad address ${ctx.payload.to}`); // no retries
  // ctx.token is strictly increasing per claim: pass it on as an idempotency key.
  ctx.checkLease(); // throws LeaseLostError if another worker now owns this job
  return { sent: ctx.payload.to, idempotencyKey: `email-${ctx.job.id}-${ctx.token}` };
};

const baton = createBaton({
  connectionString,
  schema: 'baton_quickstart',
  queues: { emails: 4 }, // this process works the "emails" queue with 4 slots
  handlers: { 'send-email': sendEmail },
});

await baton.migrate();
await baton.start();

const { job } = await baton.enqueue({ jobType: 'send-email', queue: 'emails', payload: { to: 'ada@example.com' } });
await baton.enqueue({ jobType: 'send-email', queue: 'emails', payload: { to: 'later@example.com' }, delayMs: 500 });
const first = await baton.enqueue({
  jobType: 'send-email',
  queue: 'emails',
  payload: { to: 'x@example.com' },
  idempotencyKey: 'signup-42',
});
const again = await baton.enqueue({
  jobType: 'send-email',
  queue: 'emails',
  payload: { to: 'x@example.com' },
  idempotencyKey: 'signup-42',
});
console.log('duplicate returns the first job:', again.created === false && again.job.id === first.job.id);

// Enqueue inside your own transaction: the job exists only if you commit.
const pool = new pg.Pool({ connectionString });
const client = await pool.connect();
await client.query('BEGIN');
await client.query('SELECT 1'); // ... your own writes ...
await baton.enqueue({ jobType: 'send-email', queue: 'emails', payload: { to: 'tx@example.com' } }, { client });
await client.query('COMMIT');
client.release();
await pool.end();

// Wait for the first job's outcome (polling the admin API; handlers could also signal).
for (let i = 0; i < 100; i++) {
  const current = await baton.admin.getJob(job.id);
  if (current.state === 'succeeded') {
    console.log('job', current.id, 'succeeded with', current.result);
    break;
  }
  await new Promise((r) => setTimeout(r, 50));
}
console.log('queue depth:', await baton.admin.queueDepth('emails'));
await baton.stop({ drainMs: 5_000 });
