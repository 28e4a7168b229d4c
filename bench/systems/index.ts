// Loads the adapter of a variant lazily, so a producer process imports only its system. The
// peers' packages live in bench/node_modules (npm run bench:install), outside the main install;
// their adapters are loaded by URL, so the main type check does not need those packages
// (scripts/typecheck-bench-peers.mjs checks the adapters when they are installed).

import type { ProducerSide, Variant, WorkerSide } from './types.ts';

interface GraphileAdapter {
  graphileWorker(connectionString: string, v: Variant): WorkerSide;
  graphileProducer(connectionString: string): ProducerSide;
}
interface PgBossAdapter {
  pgBossWorker(connectionString: string, v: Variant): WorkerSide;
  pgBossProducer(connectionString: string): ProducerSide;
}

/** A peer's adapter; a peer not installed is one plain line saying how to install it. */
async function peer<T>(file: string, pkg: string): Promise<T> {
  try {
    return (await import(new URL(file, import.meta.url).href)) as T;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' && e.message.includes(`'${pkg}'`)) {
      throw new Error(`${pkg} is not installed: run npm run bench:install (or --peers none)`, { cause: err });
    }
    throw err;
  }
}
const graphile = () => peer<GraphileAdapter>('./graphile.ts', 'graphile-worker');
const pgBoss = () => peer<PgBossAdapter>('./pgboss.ts', 'pg-boss');

export async function workerFor(v: Variant, connectionString: string): Promise<WorkerSide> {
  switch (v.system) {
    case 'baton':
      return (await import('./baton.ts')).batonWorker(connectionString, v);
    case 'graphile-worker':
      return (await graphile()).graphileWorker(connectionString, v);
    case 'pg-boss':
      return (await pgBoss()).pgBossWorker(connectionString, v);
  }
}

export async function producerFor(v: Variant, connectionString: string, via: 'library' | 'http', httpBase?: string): Promise<ProducerSide> {
  if (via === 'http') return (await import('./baton-http.ts')).batonHttpProducer(httpBase!);
  switch (v.system) {
    case 'baton':
      return (await import('./baton.ts')).batonProducer(connectionString);
    case 'graphile-worker':
      return (await graphile()).graphileProducer(connectionString);
    case 'pg-boss':
      return (await pgBoss()).pgBossProducer(connectionString);
  }
}
