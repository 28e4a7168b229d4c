// OutboxStore on node-postgres: runs the named outbox queries and maps rows.

import type {
  OutboxClaimFence,
  OutboxClaimResult,
  OutboxFailItem,
  OutboxListParams,
  OutboxStatsRow,
  OutboxStore,
} from '../../driver/outbox-store.ts';
import type { NewOutboxMessage, OutboxMessage, OutboxState, RecordResult } from '../../types/outbox.ts';
import { translatePgError } from './errors.ts';
import { lockNamespace } from './lock-namespace.ts';
import type { PgPoolLike, Queryable, QueryConfigLike } from './pool.ts';
import { unnamedQueryable } from './pooler-client.ts';
import { type OutboxQueries, outboxQueries } from './queries/outbox.ts';
import { queryRows } from './query-rows.ts';
import { compareIds } from './rows.ts';

interface OutboxRow {
  id: string;
  tenant_id: string;
  destination: string;
  topic: string;
  payload: unknown;
  headers: Record<string, string>;
  message_key: string;
  ordering_key: string | null;
  state: OutboxState;
  attempt: number;
  max_attempts: number;
  next_attempt_at: Date;
  last_error: OutboxMessage['lastError'];
  dead_letter_reason: OutboxMessage['deadLetterReason'];
  replay_count: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

function rowToMessage(r: OutboxRow): OutboxMessage {
  return {
    id: String(r.id),
    tenantId: r.tenant_id,
    destination: r.destination,
    topic: r.topic,
    payload: r.payload,
    headers: r.headers,
    messageKey: r.message_key,
    orderingKey: r.ordering_key,
    maxAttempts: r.max_attempts,
    state: r.state,
    attempt: r.attempt,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    deadLetterReason: r.dead_letter_reason,
    replayCount: r.replay_count,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
  };
}

/** A row of a claim: a claimed head, or a message of its run (run_of: the head's id). */
type ClaimRow = OutboxRow & { kind: 'claimed' | 'run' | 'written'; run_of: string | null };

function claimResult(rows: ClaimRow[]): OutboxClaimResult {
  const heads: OutboxMessage[] = [];
  const runs = new Map<string, OutboxMessage[]>();
  for (const r of rows) {
    if (r.kind === 'claimed') heads.push(rowToMessage(r));
    else if (r.run_of !== null) runs.set(r.run_of, [...(runs.get(r.run_of) ?? []), rowToMessage(r)]);
  }
  for (const run of runs.values()) run.sort((a, b) => compareIds(a.id, b.id));
  const claimed = heads.filter((m) => m.state === 'pending').sort((a, b) => compareIds(a.id, b.id));
  return { claimed, exhausted: heads.filter((m) => m.state !== 'pending'), runs };
}

const fenceValues = (items: OutboxClaimFence[]) => [
  items.map((i) => i.id),
  items.map((i) => i.attempt),
  items.map((i) => i.replayCount),
  items.map((i) => i.run === true),
];

const key = (m: { tenantId: string; destination: string; messageKey: string }) =>
  `${m.tenantId}\u0000${m.destination}\u0000${m.messageKey}`;

export class PgOutboxStore implements OutboxStore {
  readonly #pool: PgPoolLike;
  readonly #q: OutboxQueries;
  readonly #lockNamespace: number;

  readonly #unnamed: boolean;

  /**
   * `quotedSchema` must already be quoted (see quoteSchema). `unnamed`: a caller's client
   * (a record in the caller's transaction) is sent no named statement (pooler-client.ts).
   */
  constructor(pool: PgPoolLike, quotedSchema: string, opts: { unnamed?: boolean } = {}) {
    this.#pool = pool;
    this.#unnamed = opts.unnamed === true;
    this.#q = outboxQueries(quotedSchema);
    this.#lockNamespace = lockNamespace('outbox', quotedSchema);
  }

  #rows<R>(query: QueryConfigLike, values: unknown[], on: Queryable = this.#pool): Promise<R[]> {
    return queryRows<R>(on, query, values);
  }

  async outboxInsertMany(p: { messages: NewOutboxMessage[]; client?: Queryable | undefined; channel: string }): Promise<RecordResult[]> {
    const on = p.client ? (this.#unnamed ? unnamedQueryable(p.client) : p.client) : this.#pool;
    const payload = JSON.stringify(
      p.messages.map((m) => ({
        tenant_id: m.tenantId,
        destination: m.destination,
        topic: m.topic,
        payload: m.payload === undefined ? null : m.payload,
        headers: m.headers,
        message_key: m.messageKey,
        ordering_key: m.orderingKey,
        max_attempts: m.maxAttempts,
      })),
    );
    const inserted = (await this.#rows<OutboxRow>(this.#q.insertMany, [payload, this.#lockNamespace, p.channel], on)).map(rowToMessage);
    inserted.sort((a, b) => compareIds(a.id, b.id));
    const byKey = new Map<string, RecordResult>();
    for (const message of inserted) byKey.set(key(message), { message, created: true });
    // A duplicate key inserted nothing: read the first back (a new statement, so it sees a
    // concurrent duplicate that committed meanwhile).
    const missing = p.messages.filter((m) => !byKey.has(key(m)));
    if (missing.length > 0) {
      const rows = await this.#rows<OutboxRow>(
        this.#q.selectByKeys,
        [missing.map((m) => m.tenantId), missing.map((m) => m.destination), missing.map((m) => m.messageKey)],
        on,
      );
      for (const message of rows.map(rowToMessage)) byKey.set(key(message), { message, created: false });
    }
    // A key repeated within the batch: the first occurrence created it, the later ones did not.
    const seen = new Set<string>();
    return p.messages.map((m) => {
      const k = key(m);
      const r = byKey.get(k);
      if (!r) throw translatePgError(new Error(`outbox message ${m.messageKey} was neither inserted nor found`));
      const first = !seen.has(k);
      seen.add(k);
      return first ? r : { message: r.message, created: false };
    });
  }

  async outboxClaim(p: { destinations: string[]; limit: number; visibilityMs: number }): Promise<OutboxClaimResult> {
    if (p.destinations.length === 0 || p.limit <= 0) return { claimed: [], exhausted: [], runs: new Map() };
    return claimResult(await this.#rows<ClaimRow>(this.#q.claim, [p.destinations, p.limit, p.visibilityMs]));
  }

  async outboxMarkPublishedMany(items: OutboxClaimFence[]): Promise<Set<string>> {
    if (items.length === 0) return new Set();
    const rows = await this.#rows<{ id: string }>(this.#q.publishedMany, fenceValues(items));
    return new Set(rows.map((r) => r.id));
  }

  async outboxMarkPublishedClaimNext(p: {
    items: OutboxClaimFence[];
    limit: number;
    visibilityMs: number;
  }): Promise<{ written: Set<string>; next: OutboxClaimResult }> {
    if (p.items.length === 0) return { written: new Set(), next: claimResult([]) };
    const rows = await this.#rows<ClaimRow>(this.#q.publishedManyClaimNext, [...fenceValues(p.items), p.limit, p.visibilityMs]);
    return {
      written: new Set(rows.filter((r) => r.kind === 'written').map((r) => String(r.id))),
      next: claimResult(rows.filter((r) => r.kind !== 'written')),
    };
  }

  async outboxFailMany(p: { items: OutboxFailItem[]; backoffBaseMs: number; backoffCapMs: number }): Promise<Map<string, OutboxState>> {
    if (p.items.length === 0) return new Map();
    const rows = await this.#rows<{ id: string; state: OutboxState }>(this.#q.failMany, [
      p.items.map((i) => i.id),
      p.items.map((i) => i.attempt),
      p.backoffBaseMs,
      p.backoffCapMs,
      p.items.map((i) => JSON.stringify(i.error)),
      p.items.map((i) => i.reject),
      p.items.map((i) => i.retryAfterMs),
      p.items.map((i) => i.replayCount),
      p.items.map((i) => i.run === true),
    ]);
    return new Map(rows.map((r) => [r.id, r.state]));
  }

  async outboxGet(id: string, tenantId?: string): Promise<OutboxMessage | null> {
    const [row] =
      tenantId === undefined
        ? await this.#rows<OutboxRow>(this.#q.get, [id])
        : await this.#rows<OutboxRow>(this.#q.getInTenant, [id, tenantId]);
    return row ? rowToMessage(row) : null;
  }

  async outboxList(p: OutboxListParams): Promise<OutboxMessage[]> {
    const values = [p.state ?? null, p.destination ?? null, p.tenantId ?? null, p.limit, p.offset, p.cursor ?? null];
    const rows = await this.#rows<OutboxRow>(this.#q.list, values);
    return rows.map(rowToMessage);
  }

  async outboxReplay(id: string): Promise<OutboxMessage | null> {
    const [row] = await this.#rows<OutboxRow>(this.#q.replay, [id]);
    return row ? rowToMessage(row) : null;
  }

  async outboxReplayDeadLetters(p: {
    limit: number;
    destination?: string | undefined;
    tenantId?: string | undefined;
  }): Promise<OutboxMessage[]> {
    const rows = await this.#rows<OutboxRow>(this.#q.replayDeadLetters, [p.limit, p.destination ?? null, p.tenantId ?? null]);
    return rows.map(rowToMessage).sort((a, b) => compareIds(a.id, b.id));
  }

  async outboxStats(p: { tenantId?: string | undefined }): Promise<OutboxStatsRow> {
    const [row] = await this.#rows<{ counts: OutboxStatsRow['byDestination']; oldest: number | null }>(this.#q.stats, [p.tenantId ?? null]);
    return { byDestination: row?.counts ?? [], oldestPendingAgeSeconds: row?.oldest ?? null };
  }

  async outboxPurge(p: { state: 'published' | 'dead_lettered'; olderThanMs: number; limit: number; epoch: string }): Promise<number> {
    try {
      const r = await this.#pool.query({ ...this.#q.purge, values: [p.state, p.olderThanMs, p.limit, p.epoch] });
      return r.rowCount ?? 0;
    } catch (err) {
      throw translatePgError(err);
    }
  }
}
