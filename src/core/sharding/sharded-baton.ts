// A Baton over several independent databases: one engine per cluster, composed. Producers go to
// the cluster of the job's queue; a worker starts only the engines of clusters holding queues
// it works; admin reads merge. Every guarantee (leases, fencing, idempotency keys, caps,
// fairness, leadership) is each engine's own, hence per cluster; nothing spans two clusters.
// Cron, workflows and the outbox live on the home cluster (the default, or the first named).

import type { EventEmitter } from 'node:events';
import { BatonError } from '../../types/errors.ts';
import type { EnqueueResult, JobSpec } from '../../types/job.ts';
import type { WorkflowOptions } from '../../types/workflow.ts';
import type { Baton, EngineStats, EnqueueOptions } from '../baton.ts';
import { EngineEventEmitter, type EngineEvents } from '../events.ts';
import { homeCron, homeRuns, refRun } from './home-services.ts';
import { clusterOf, DEFAULT_QUEUE, mustRoute, parseRef, refJob, type ShardRouting } from './routing.ts';
import { shardedAdmin } from './sharded-admin.ts';

/** A Baton over several clusters (createShardedBaton): a Baton, plus the routing and each cluster's own engine. */
export interface ShardedBaton extends Baton {
  /** Where each queue lives (validated). */
  readonly routing: ShardRouting;
  /** Each cluster's own engine, by cluster name (its ids are bare, its admin sees that cluster only). */
  readonly clusters: Readonly<Record<string, Baton>>;
  /** The clusters whose engines start() starts: those holding a queue this process works (all when it works none). */
  readonly workClusters: readonly string[];
  /** The cluster holding `queue`, or null when it is not routed and there is no default cluster. */
  clusterOf(queue: string): string | null;
}

const EVENTS = [
  'enqueued',
  'claimed',
  'started',
  'succeeded',
  'retried',
  'deadLettered',
  'fenced',
  'progress',
  'leaseLost',
  'cancelSignalled',
  'cancelled',
  'reaped',
  'purged',
  'leadership',
  'enqueueWarning',
  'released',
  'error',
] as const satisfies ReadonlyArray<keyof EngineEvents>;

/**
 * Re-emits every cluster's events on one emitter, the ids of the jobs they carry prefixed with
 * the cluster. A cluster's event is forwarded only while someone listens for it here: engines
 * skip building the payloads of events nobody listens to, and a forwarder always attached
 * would make every job pay for them.
 */
function mergedEvents(clusters: Readonly<Record<string, Baton>>): EventEmitter<EngineEvents> {
  // As an engine's own emitter: a listener that throws is reported as an 'error' event here and
  // the listeners after it still hear (a plain emitter would stop at the throw).
  const out = new EngineEventEmitter(() => undefined);
  const attached = new Map<string, Array<() => void>>();
  const known = new Set<string>(EVENTS);
  const untyped = out as unknown as EventEmitter;
  untyped.on('newListener', (name: string | symbol) => {
    if (typeof name !== 'string' || !known.has(name) || attached.has(name)) return;
    const detach = Object.entries(clusters).map(([c, b]) => {
      const forward = (payload: object) => {
        const p = payload as { job?: { id: string } };
        untyped.emit(name, p.job === undefined ? payload : { ...payload, job: refJob(c, p.job) });
      };
      const events = b.events as unknown as EventEmitter;
      events.on(name, forward);
      return () => void events.off(name, forward);
    });
    attached.set(name, detach);
  });
  untyped.on('removeListener', (name: string | symbol) => {
    if (typeof name !== 'string' || out.listenerCount(name as keyof EngineEvents) > 0) return;
    for (const off of attached.get(name) ?? []) off();
    attached.delete(name);
  });
  return out;
}

/** Adds counters field by field (numbers summed, nested records merged). */
function sumCounters<T>(a: T, b: T): T {
  if (typeof a === 'number' && typeof b === 'number') return (a + b) as T;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a ?? b;
  const out: Record<string, unknown> = { ...(a as object) };
  for (const [k, v] of Object.entries(b as object)) out[k] = k in out ? sumCounters(out[k], v) : v;
  return out as T;
}

function sumStats(all: EngineStats[]): EngineStats {
  const started = all.filter((s) => s.presenceHeld !== null);
  const [first, ...rest] = all as [EngineStats, ...EngineStats[]];
  const { slots, presenceHeld, leader, ...counters } = rest.reduce((m, s) => sumCounters(m, s), first);
  return {
    ...counters,
    slots: Object.assign({}, ...all.map((s) => s.slots)),
    presenceHeld: started.length === 0 ? null : started.every((s) => s.presenceHeld === true),
    leader: all.some((s) => s.leader === true) ? true : all.every((s) => s.leader === null) ? null : false,
  };
}

/** The spec a cluster's engine gets: parents named `<cluster>:<id>` on the job's own cluster, made bare. */
function localSpec(r: ShardRouting, cluster: string, spec: JobSpec): JobSpec {
  if (typeof spec !== 'object' || spec === null || spec.dependsOn === undefined) return spec;
  const dependsOn = spec.dependsOn.map((ref) => {
    const p = parseRef(r, ref);
    if (p === null || p.cluster !== cluster) {
      throw new BatonError(
        'INVALID_ARGUMENT',
        `dependsOn: ${JSON.stringify(ref)} is not a job of cluster ${cluster}, where queue ${spec.queue ?? DEFAULT_QUEUE} lives (a job depends only on jobs of its own cluster, named ${cluster}:<id>)`,
        { details: { field: 'dependsOn' } },
      );
    }
    return p.id;
  });
  return { ...spec, dependsOn };
}

/**
 * Composes one engine per cluster into a Baton. `home`: the cluster of cron, workflows and the
 * outbox. `workClusters`: the engines start() starts.
 */
export function composeShardedBaton(
  r: ShardRouting,
  clusters: Readonly<Record<string, Baton>>,
  o: { home: string; workClusters: readonly string[] },
): ShardedBaton {
  const home = clusters[o.home] as Baton;
  const of = (c: string) => clusters[c] as Baton;
  const queues = Object.assign({}, ...r.clusters.map((c) => of(c).config.queues));
  const admin = shardedAdmin(r, Object.fromEntries(r.clusters.map((c) => [c, of(c).admin])));
  // A spec that is not an object is the engine's to refuse (INVALID_ARGUMENT): route it to the home cluster.
  const route = (spec: JobSpec) => (typeof spec === 'object' && spec !== null ? mustRoute(r, spec.queue ?? DEFAULT_QUEUE) : o.home);
  const refResult = (c: string, res: EnqueueResult): EnqueueResult => ({ ...res, job: refJob(c, res.job) });

  return {
    routing: r,
    clusters,
    workClusters: o.workClusters,
    clusterOf: (queue) => clusterOf(r, queue),
    config: Object.freeze({ ...home.config, queues: Object.freeze(queues) }),
    async migrate() {
      const applied: string[] = [];
      for (const c of r.clusters) applied.push(...(await of(c).migrate()).applied.map((f) => `${c}:${f}`));
      return { applied };
    },
    async start() {
      const outcomes = await Promise.allSettled(o.workClusters.map((c) => of(c).start()));
      const failed = outcomes.find((x): x is PromiseRejectedResult => x.status === 'rejected');
      if (failed) {
        await Promise.allSettled(o.workClusters.map((c) => of(c).stop({ drainMs: 0 })));
        throw failed.reason;
      }
    },
    async stop(opts) {
      await Promise.all(r.clusters.map((c) => of(c).stop(opts)));
    },
    async enqueue(spec: JobSpec, opts?: EnqueueOptions) {
      const c = route(spec);
      return refResult(c, await of(c).enqueue(localSpec(r, c, spec), opts));
    },
    async enqueueMany(specs: JobSpec[], opts?: EnqueueOptions) {
      const targets = [...new Set(specs.map(route))];
      // One batch is one INSERT on one database: a batch across clusters could commit on one and not the other.
      if (targets.length > 1) {
        throw new BatonError(
          'INVALID_ARGUMENT',
          `a batch goes to one cluster: its queues are on clusters ${targets.join(', ')} (enqueue each cluster's jobs as a batch of their own)`,
          { details: { field: 'queue' } },
        );
      }
      const c = targets[0] ?? o.home;
      const results = await of(c).enqueueMany(
        specs.map((s) => localSpec(r, c, s)),
        opts,
      );
      return results.map((res) => refResult(c, res));
    },
    async wake(queue) {
      const c = clusterOf(r, queue);
      await Promise.all((c === null ? r.clusters : [c]).map((x) => of(x).wake(queue)));
    },
    admin,
    cron: homeCron(r, o.home, home.cron),
    workflow: ((name: string, fnOrOpts?: unknown, fnOpts?: WorkflowOptions) => {
      // The driving job is stored on the home cluster: a queue held elsewhere would never be worked there.
      const opts = typeof fnOrOpts === 'function' ? fnOpts : (fnOrOpts as WorkflowOptions | undefined);
      const queue = opts?.queue ?? DEFAULT_QUEUE;
      // An unrouted queue is let be (no default cluster): like any unrouted queue, it is worked once routed, to home.
      const at = clusterOf(r, queue);
      if (at !== null && at !== o.home) {
        throw new BatonError(
          'INVALID_CONFIG',
          `workflow ${name}: its queue ${queue} is on cluster ${at}; workflows run on the home cluster ${o.home}: route the queue there`,
        );
      }
      return (home.workflow as (...a: unknown[]) => unknown)(name, fnOrOpts, fnOpts);
    }) as Baton['workflow'],
    async startWorkflow(...args) {
      const started = await home.startWorkflow(...args);
      return { ...started, run: refRun(o.home, started.run) };
    },
    sendEvent: (...args) => home.sendEvent(...args),
    workflows: homeRuns(o.home, home.workflows),
    outbox: home.outbox,
    events: mergedEvents(clusters),
    stats: () => sumStats(r.clusters.map((c) => of(c).stats())),
  };
}
