// Loads the adapter of a variant lazily, so a producer process imports only its system.

import type { ProducerSide, Variant, WorkerSide } from './types.ts';

export async function workerFor(v: Variant, connectionString: string): Promise<WorkerSide> {
  switch (v.system) {
    case 'baton':
      return (await import('./baton.ts')).batonWorker(connectionString, v);
    case 'graphile-worker':
      return (await import('./graphile.ts')).graphileWorker(connectionString, v);
    case 'pg-boss':
      return (await import('./pgboss.ts')).pgBossWorker(connectionString, v);
  }
}

export async function producerFor(v: Variant, connectionString: string, via: 'library' | 'http', httpBase?: string): Promise<ProducerSide> {
  if (via === 'http') return (await import('./baton-http.ts')).batonHttpProducer(httpBase!);
  switch (v.system) {
    case 'baton':
      return (await import('./baton.ts')).batonProducer(connectionString);
    case 'graphile-worker':
      return (await import('./graphile.ts')).graphileProducer(connectionString);
    case 'pg-boss':
      return (await import('./pgboss.ts')).pgBossProducer(connectionString);
  }
}
