// baton.outbox: record messages in the caller's transaction (never beginning, committing or
// rolling it back, like enqueue), read and replay them, and the relay's counters. Recording
// needs no publisher here: the relay may run in another process.

import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { OutboxStore } from '../../driver/outbox-store.ts';
import type { Queryable } from '../../driver/queryable.ts';
import { BatonError } from '../../types/errors.ts';
import { isJobId } from '../../types/job.ts';
import { assertListCursor } from '../admin.ts';
import { nameSchema } from '../config.ts';
import { givenTrace } from '../producer.ts';
import type { TraceCarrier } from '../tracing.ts';
import {
  normalizeMessage,
  OUTBOX_STATES,
  type OutboxMessage,
  type OutboxMessageInput,
  type OutboxState,
  RECORD_BATCH_MAX,
  type RecordResult,
  withTraceHeaders,
} from './message.ts';
import type { Relay, RelayCounters, RelayEvents } from './relay.ts';

export const OUTBOX_LIST_LIMIT_DEFAULT = 50;
export const OUTBOX_LIST_LIMIT_MAX = 500;
export const OUTBOX_LIST_OFFSET_MAX = 100_000;
export const OUTBOX_REPLAY_LIMIT_DEFAULT = 100;
export const OUTBOX_REPLAY_LIMIT_MAX = 1_000;

/** The NOTIFY channel that wakes the relays of `schema`. */
export function outboxChannelFor(schema: string): string {
  return `baton_outbox_${createHash('sha1').update(schema).digest('hex').slice(0, 24)}`;
}

/** Options of outbox.record and recordMany: the caller's transaction and trace context. */
export interface RecordOptions {
  /** The caller's client, inside their transaction: the message commits or rolls back with it. */
  client?: Queryable;
  /**
   * The W3C trace context sent with the messages (traceparent / tracestate headers); null: none.
   * Default: the active one (when tracing is on), as enqueue captures it.
   */
  traceContext?: TraceCarrier | null;
}

/** The filter and page of outbox.list. */
export interface ListOutboxFilter {
  state?: OutboxState | undefined;
  destination?: string | undefined;
  tenantId?: string | undefined;
  limit?: number | undefined;
  /** >= 0, default 0. Not with `cursor`. */
  offset?: number | undefined;
  /**
   * Keyset paging: a page's `nextCursor`, to read the page after it. Each page then costs what
   * the first one does, however deep.
   */
  cursor?: string | undefined;
}

/** A page of outbox.list, newest first. */
export interface OutboxPage {
  messages: OutboxMessage[];
  limit: number;
  offset: number;
  /** The cursor of the next page: the id of the page's last message when the page is full; null otherwise. */
  nextCursor: string | null;
}

/** Outbox messages per destination and state, and the age of the oldest pending one. */
export interface OutboxStats {
  /** Counts per destination and state (states with none are 0). */
  destinations: Array<{ destination: string; counts: Record<OutboxState, number> }>;
  totals: Record<OutboxState, number>;
  /** Seconds since the oldest pending message was recorded; null when none is pending. */
  oldestPendingAgeSeconds: number | null;
}

/** The transactional outbox, `baton.outbox`: record messages, list, replay and count them (docs/outbox.md). */
export interface OutboxApi {
  /** Records one message on `opts.client` (the caller's transaction) or, without it, on its own. */
  record(message: OutboxMessageInput, opts?: RecordOptions): Promise<RecordResult>;
  /** One INSERT for the batch; results in input order. */
  recordMany(messages: OutboxMessageInput[], opts?: RecordOptions): Promise<RecordResult[]>;
  /**
   * Throws OUTBOX_MESSAGE_NOT_FOUND. With `tenantId`, another tenant's message is not found
   * exactly as an id nobody has, at the same cost: the read itself is limited to the tenant.
   */
  get(id: string, opts?: { tenantId?: string | undefined }): Promise<OutboxMessage>;
  /** Newest first; INVALID_ARGUMENT for a bad filter, or a cursor beside an offset. */
  list(filter?: ListOutboxFilter): Promise<OutboxPage>;
  /** A published or dead-lettered message back to pending with a fresh budget; 409 (OUTBOX_STATE_CONFLICT) while pending. */
  replay(id: string): Promise<OutboxMessage>;
  /** Up to `limit` dead letters (default 100, max 1000), oldest first, back to pending. */
  replayDeadLetters(p?: { limit?: number; destination?: string; tenantId?: string }): Promise<OutboxMessage[]>;
  stats(p?: { tenantId?: string }): Promise<OutboxStats>;
  /** The relay in this process: its counters, or null when none runs here. */
  relayCounters(): RelayCounters | null;
  /** The relay's events in this process (none are emitted when no relay runs here). */
  readonly events: EventEmitter<RelayEvents>;
}

/** A message id has a job id's shape: a positive int8 written in decimal. */
export const isOutboxId = isJobId;

export interface OutboxServiceDeps {
  store: OutboxStore;
  adminStore: OutboxStore;
  schema: string;
  maxAttemptsDefault: number;
  relay: Relay | null;
  /** The active trace context, sent with each message recorded without one given. */
  captureTrace?: () => TraceCarrier | null;
}

const optionalName = (what: string, v: string | undefined): string | undefined => {
  if (v === undefined) return undefined;
  if (!nameSchema.safeParse(v).success) throw new BatonError('INVALID_ARGUMENT', `${what} is not a valid name`);
  return v;
};

function boundedInt(what: string, v: number | undefined, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (!Number.isInteger(v) || v < min || v > max)
    throw new BatonError('INVALID_ARGUMENT', `${what} must be an integer from ${min} to ${max}`);
  return v;
}

export class OutboxService implements OutboxApi {
  readonly #d: OutboxServiceDeps;
  readonly #channel: string;
  readonly events: EventEmitter<RelayEvents>;

  constructor(deps: OutboxServiceDeps) {
    this.#d = deps;
    this.events = deps.relay?.events ?? new EventEmitter<RelayEvents>();
    this.#channel = outboxChannelFor(deps.schema);
  }

  async record(message: OutboxMessageInput, opts: RecordOptions = {}): Promise<RecordResult> {
    const [r] = await this.recordMany([message], opts);
    return r as RecordResult;
  }

  async recordMany(messages: OutboxMessageInput[], opts: RecordOptions = {}): Promise<RecordResult[]> {
    if (!Array.isArray(messages) || messages.length > RECORD_BATCH_MAX) {
      throw new BatonError('INVALID_ARGUMENT', `messages must be an array of at most ${RECORD_BATCH_MAX} messages`);
    }
    if (messages.length === 0) return [];
    const trace = opts.traceContext === undefined ? (this.#d.captureTrace?.() ?? null) : opts.traceContext && givenTrace(opts.traceContext);
    const normalized = messages.map((m, i) =>
      withTraceHeaders(normalizeMessage(m, this.#d.maxAttemptsDefault, messages.length > 1 ? i : undefined), trace),
    );
    const results = await this.#d.store.outboxInsertMany({ messages: normalized, client: opts.client, channel: this.#channel });
    // Committed already (no caller's transaction): the local relay need not wait for the NOTIFY.
    if (!opts.client && results.some((r) => r.created)) this.#d.relay?.wake();
    return results;
  }

  async get(id: string, opts: { tenantId?: string | undefined } = {}): Promise<OutboxMessage> {
    const m = isOutboxId(id) ? await this.#d.adminStore.outboxGet(id, opts.tenantId) : null;
    if (!m) throw new BatonError('OUTBOX_MESSAGE_NOT_FOUND', `outbox message ${id} not found`, { details: { id } });
    return m;
  }

  async list(filter: ListOutboxFilter = {}): Promise<OutboxPage> {
    if (filter.state !== undefined && !OUTBOX_STATES.includes(filter.state)) {
      throw new BatonError('INVALID_ARGUMENT', `state must be one of ${OUTBOX_STATES.join(', ')}`);
    }
    const limit = boundedInt('limit', filter.limit, OUTBOX_LIST_LIMIT_DEFAULT, 1, OUTBOX_LIST_LIMIT_MAX);
    const offset = boundedInt('offset', filter.offset, 0, 0, OUTBOX_LIST_OFFSET_MAX);
    assertListCursor(filter.cursor, offset);
    const messages = await this.#d.adminStore.outboxList({
      state: filter.state,
      destination: optionalName('destination', filter.destination),
      tenantId: optionalName('tenantId', filter.tenantId),
      limit,
      offset,
      cursor: filter.cursor,
    });
    return { messages, limit, offset, nextCursor: messages.length === limit ? (messages.at(-1)?.id ?? null) : null };
  }

  async replay(id: string): Promise<OutboxMessage> {
    const replayed = isOutboxId(id) ? await this.#d.adminStore.outboxReplay(id) : null;
    if (replayed) {
      this.#d.relay?.wake();
      return replayed;
    }
    const current = await this.get(id);
    throw new BatonError(
      'OUTBOX_STATE_CONFLICT',
      `outbox message ${id} is ${current.state}; only a published or dead-lettered one can be replayed`,
      {
        details: { id, state: current.state },
      },
    );
  }

  async replayDeadLetters(p: { limit?: number; destination?: string; tenantId?: string } = {}): Promise<OutboxMessage[]> {
    const limit = boundedInt('limit', p.limit, OUTBOX_REPLAY_LIMIT_DEFAULT, 1, OUTBOX_REPLAY_LIMIT_MAX);
    const replayed = await this.#d.adminStore.outboxReplayDeadLetters({
      limit,
      destination: optionalName('destination', p.destination),
      tenantId: optionalName('tenantId', p.tenantId),
    });
    if (replayed.length > 0) this.#d.relay?.wake();
    return replayed;
  }

  async stats(p: { tenantId?: string } = {}): Promise<OutboxStats> {
    const row = await this.#d.adminStore.outboxStats({ tenantId: optionalName('tenantId', p.tenantId) });
    const zero = (): Record<OutboxState, number> => ({ pending: 0, published: 0, dead_lettered: 0 });
    const totals = zero();
    const byDest = new Map<string, Record<OutboxState, number>>();
    for (const { destination, state, n } of row.byDestination) {
      const c = byDest.get(destination) ?? zero();
      c[state] += n;
      totals[state] += n;
      byDest.set(destination, c);
    }
    return {
      destinations: [...byDest].map(([destination, counts]) => ({ destination, counts })),
      totals,
      oldestPendingAgeSeconds: row.oldestPendingAgeSeconds,
    };
  }

  relayCounters(): RelayCounters | null {
    return this.#d.relay ? { ...this.#d.relay.counters } : null;
  }
}
