// The outbox chaos verdict, from what the consumers recorded and the database's ground truth:
// every committed message was delivered at least once, none of a rolled-back transaction
// was, each ordering key's first deliveries follow record order, and every duplicate delivery
// is explained by a fault (the receiver kept its answer, or a relay was killed meanwhile).

export interface Delivery {
  key: string;
  /** Local ms when the receiver accepted it. */
  at: number;
  /** The receiver accepted it and then never answered (the relay timed out). */
  hung: boolean;
}

export interface OutboxChaosInput {
  /** Webhook message keys of committed transactions, with their ordering key and record id. */
  committedHooks: Array<{ key: string; orderingKey: string | null; id: bigint }>;
  committedJs: string[];
  /** Keys recorded in transactions that rolled back. */
  rolledBack: Set<string>;
  /** In the order the receiver accepted them. */
  deliveries: Delivery[];
  /** Msg ids of the stream's messages, one per stored message. */
  streamIds: string[];
  /** Local ms of each kill -9 of a relay. */
  kills: number[];
  /** A relay's request may still reach the receiver this long after it was killed. */
  killSlackMs: number;
  /** A delivery whose outcome a kill lost came at most this long before the kill (the claim's visibility). */
  claimWindowMs: number;
  /** Outbox rows not published at the end. */
  unpublished: number;
}

export interface OutboxChaosCheck {
  violations: string[];
  duplicates: { total: number; byHang: number; byKill: number };
}

export function checkOutboxChaos(i: OutboxChaosInput): OutboxChaosCheck {
  const violations: string[] = [];
  const byKey = new Map<string, Delivery[]>();
  for (const d of i.deliveries) byKey.set(d.key, [...(byKey.get(d.key) ?? []), d]);
  const committed = new Set(i.committedHooks.map((h) => h.key));
  for (const key of committed) if (!byKey.has(key)) violations.push(`lost: committed webhook message ${key} was never delivered`);
  for (const key of byKey.keys()) {
    if (i.rolledBack.has(key)) violations.push(`phantom: ${key} of a rolled-back transaction was delivered`);
    else if (!committed.has(key)) violations.push(`phantom: ${key} was delivered but never committed`);
  }
  const inStream = new Map<string, number>();
  for (const id of i.streamIds) inStream.set(id, (inStream.get(id) ?? 0) + 1);
  for (const key of i.committedJs) if (!inStream.has(key)) violations.push(`lost: committed NATS message ${key} is not in the stream`);
  for (const [key, n] of inStream) {
    if (!i.committedJs.includes(key)) violations.push(`phantom: ${key} is in the stream but was never committed`);
    if (n > 1) violations.push(`duplicate in the stream: ${key} stored ${n} times (inside the duplicate window)`);
  }
  // Order: per ordering key, the first delivery of each message follows record (id) order.
  // Judged by arrival order, not by `at`: a run publishes back to back, so several messages
  // of a key often arrive within one millisecond.
  const firstSeen = new Map<string, number>();
  i.deliveries.forEach((d, pos) => {
    if (!firstSeen.has(d.key)) firstSeen.set(d.key, pos);
  });
  const byOrdering = new Map<string, Array<{ key: string; id: bigint }>>();
  for (const h of i.committedHooks) if (h.orderingKey) byOrdering.set(h.orderingKey, [...(byOrdering.get(h.orderingKey) ?? []), h]);
  for (const [ok, msgs] of byOrdering) {
    const first = msgs
      .filter((m) => firstSeen.has(m.key))
      .map((m) => ({ ...m, pos: firstSeen.get(m.key)! }))
      .sort((a, b) => a.pos - b.pos);
    for (let n = 1; n < first.length; n++) {
      if (first[n]!.id < first[n - 1]!.id)
        violations.push(`order: key ${ok}: ${first[n - 1]!.key} was first delivered before ${first[n]!.key}, recorded earlier`);
    }
  }
  let total = 0;
  let byHang = 0;
  let byKill = 0;
  for (const [key, ds] of byKey) {
    const sorted = [...ds].sort((a, b) => a.at - b.at);
    for (let n = 1; n < sorted.length; n++) {
      total++;
      const prev = sorted[n - 1]!;
      const cur = sorted[n]!;
      if (prev.hung) byHang++;
      else if (i.kills.some((k) => k >= prev.at - i.killSlackMs && k <= cur.at && k - prev.at <= i.claimWindowMs)) byKill++;
      else violations.push(`unexplained duplicate: ${key} delivered again at +${cur.at - prev.at} ms with no hang or kill between`);
    }
  }
  if (i.unpublished > 0) violations.push(`drain: ${i.unpublished} outbox message(s) not published at the end`);
  return { violations, duplicates: { total, byHang, byKill } };
}
