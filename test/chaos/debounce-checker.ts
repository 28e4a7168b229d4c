// The debounce scenario's checker (debounce.ts): from the jobs table and the producers' acks.
//   1. Never two pending jobs for one key that no worker ever claimed (lease_token NULL), in any
//      sample taken during the run nor at the end: each would take a trailing enqueue's fold.
//   2. No lost last payload: every acknowledged enqueue (key, seq) answered with job J is covered
//      by what ran. J succeeded, and its handler ran a payload of that key with a seq at least
//      seq (a later enqueue of the key may have replaced it before the claim: never an older one).
//   3. Every job of the scenario finished (the drain ended).

export interface DebounceAck {
  key: string;
  seq: number;
  jobId: string;
}

export interface DebounceJob {
  id: string;
  state: string;
  key: string;
  /** The seq of the payload the job holds (frozen once claimed). */
  seq: number;
  /** The seq the handler that succeeded ran with (its result), when it succeeded. */
  ranSeq: number | null;
}

export interface DebounceCheck {
  ok: boolean;
  violations: string[];
  acks: number;
  jobs: number;
  /** Acknowledged enqueues a fold answered (created no job). */
  folded: number;
}

export function checkDebounce(o: {
  acks: DebounceAck[];
  jobs: DebounceJob[];
  /** Keys seen with two or more never-claimed pending jobs, per sample (with when). */
  doublePending: Array<{ at: number; key: string; n: number }>;
}): DebounceCheck {
  const violations: string[] = [];
  for (const d of o.doublePending)
    violations.push(`two pending: key ${d.key} had ${d.n} unclaimed pending jobs at ${new Date(d.at).toISOString()}`);
  const byId = new Map(o.jobs.map((j) => [j.id, j]));
  for (const j of o.jobs) {
    if (j.state !== 'succeeded') violations.push(`unfinished: job ${j.id} of key ${j.key} ended ${j.state}`);
  }
  let folded = 0;
  const created = new Set<string>();
  for (const a of o.acks) {
    const j = byId.get(a.jobId);
    if (!j) {
      violations.push(`lost: enqueue ${a.key}#${a.seq} was answered with job ${a.jobId}, which does not exist`);
      continue;
    }
    if (created.has(a.jobId)) folded++;
    created.add(a.jobId);
    if (j.key !== a.key) violations.push(`crossed: enqueue ${a.key}#${a.seq} was answered with job ${j.id} of key ${j.key}`);
    if (j.state === 'succeeded' && (j.ranSeq === null || j.ranSeq < a.seq)) {
      violations.push(`lost payload: enqueue ${a.key}#${a.seq} folded into job ${j.id}, whose handler ran seq ${j.ranSeq}`);
    }
  }
  return { ok: violations.length === 0, violations, acks: o.acks.length, jobs: o.jobs.length, folded };
}
