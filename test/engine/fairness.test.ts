// Fair dispatch through the engine: behind one tenant's backlog, another tenant's jobs start
// among the first claims with fairness 'tenant' (the default), and only after the backlog
// with fairness 'none' (FIFO per queue).

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { useEngines } from './harness.ts';

const db = useTestDatabase();
const BACKLOG = 300;

describe.each(['tenant', 'none'] as const)('fairness %s', (fairness) => {
  const engines = useEngines(db);

  it(
    fairness === 'tenant' ? "serves a small tenant beside a large one's backlog" : "serves a small tenant only after a large one's backlog",
    async () => {
      const producer = engines.producer();
      await producer.enqueueMany(Array.from({ length: BACKLOG }, () => ({ jobType: 'work', queue: 'fair', tenantId: 'big' })));
      await producer.enqueueMany(Array.from({ length: 5 }, () => ({ jobType: 'work', queue: 'fair', tenantId: 'small' })));
      const order: string[] = [];
      await engines.start({
        queues: { fair: 4 },
        fairness,
        handlers: {
          work: (ctx) => {
            order.push(ctx.job.tenantId);
          },
        },
      });
      await waitFor(() => order.length === BACKLOG + 5, { timeoutMs: 60_000, message: 'every job to run' });
      const lastSmall = order.lastIndexOf('small');
      if (fairness === 'tenant') expect(lastSmall).toBeLessThan(20);
      else expect(order.indexOf('small')).toBeGreaterThanOrEqual(BACKLOG - 8);
    },
  );
});
