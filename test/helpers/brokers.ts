// The brokers the outbox tests publish to for real: RabbitMQ (127.0.0.1:5672, guest/guest) and
// NATS with JetStream (127.0.0.1:4222). A broker that is not reachable skips its tests with a
// loud warning; under CI (where .ci/run starts both) it fails the file instead.

import net from 'node:net';

export const AMQP_URL = process.env.BATON_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const NATS_URL = process.env.BATON_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(2_000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** Whether the broker at `url` answers; false (with a warning) to skip, or a throw under CI. */
export async function brokerAvailable(name: string, url: string): Promise<boolean> {
  const u = new URL(url);
  const ok = await reachable(u.hostname, Number(u.port));
  if (ok) return true;
  const msg = `${name} is not reachable at ${u.hostname}:${u.port}`;
  if (process.env.CI === 'true') throw new Error(`${msg}: .ci/run starts it; under CI its tests must run`);
  console.warn(`\n!!! SKIPPING ${name} TESTS: ${msg} (start it to run them) !!!\n`);
  return false;
}

/** A name no other test file uses: brokers are shared by every file and every run. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}
