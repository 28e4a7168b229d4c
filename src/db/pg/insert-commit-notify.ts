// An enqueue and its wake-up in one round trip: BEGIN; <insert>; COMMIT; <notify>; Sync.
// The insert commits (WAL flush included) before the NOTIFY's own transaction starts, so it
// never holds the database-wide notify lock; PostgreSQL sends replies only at the Sync, so
// listeners are signalled before the producer hears its commit, not after its process wakes.

import pg from 'pg';
import { UnnamedStatementClient } from './pooler-client.ts';

/** The wire calls of pg's Connection used here (its typings omit parsedStatements). */
interface Wire {
  parse(m: { text: string; name?: string }): void;
  bind(m: { statement?: string; values?: unknown[] }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(m: Record<string, never>): void;
  sync(): void;
  stream: { cork?: () => void; uncork?: () => void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
}

/** pg's row collector behind Query (its typings leave it out). */
interface ResultLike<R> {
  addFields(fields: unknown): void;
  parseRow(fields: unknown): R;
  addRow(row: R): void;
  rows: R[];
}

interface Named {
  name: string;
  text: string;
  values: unknown[];
}

/** The insert's rows, and the NOTIFY's error when only the wake-up failed (the insert committed). */
export interface InsertCommitNotifyResult<R> {
  rows: R[];
  notifyError: Error | null;
}

// Replies counted by CommandComplete: BEGIN, insert, COMMIT, notify.
const INSERT = 1;
const NOTIFY = 3;

/**
 * A pg Query (so a pipelined client accepts it) that writes four statements and one Sync.
 * An error before the NOTIFY's reply rejects (the insert did not commit); an error of the
 * NOTIFY alone resolves with it. After either, the caller discards the connection: its
 * transaction may be aborted and which statements it holds is no longer known.
 */
class InsertCommitNotify<R> extends pg.Query {
  readonly #insert: Named;
  readonly #notify: Named;
  #phase = 0;
  #notifyParsed = false;
  #settled = false;
  #notifyError: Error | null = null;

  constructor(insert: Named, notify: Named, settle: (err: Error | null, out?: InsertCommitNotifyResult<R>) => void) {
    // Query's own fields serve the insert: its row parser, and its callback, which the client
    // wraps to clear its query_timeout timer. Every ending goes through that callback (see
    // #finish); the client calls it directly when the timer fires first.
    super({ name: insert.name, text: insert.text }, (err: Error | null | undefined, out?: InsertCommitNotifyResult<R>) => {
      if (this.#settled) return;
      this.#settled = true;
      settle(err ?? null, out);
    });
    this.#insert = insert;
    this.#notify = notify;
  }

  override submit = (connection: pg.Connection): void => {
    const c = connection as unknown as Wire;
    c.stream.cork?.();
    try {
      c.parse({ text: 'BEGIN' });
      c.bind({});
      c.execute({});
      this.#statement(c, this.#insert, true);
      c.parse({ text: 'COMMIT' });
      c.bind({});
      c.execute({});
      this.#notifyParsed = this.#statement(c, this.#notify, false);
      c.sync();
    } finally {
      c.stream.uncork?.();
    }
  };

  /** Parses `s` unless this connection already holds it; answers whether it sent a Parse. */
  #statement(c: Wire, s: Named, describe: boolean): boolean {
    const parse = c.parsedStatements[s.name] !== s.text && c.submittedNamedStatements[s.name] !== s.text;
    if (parse) c.parse({ text: s.text, name: s.name });
    c.bind({ statement: s.name, values: s.values });
    if (describe) c.describe({ type: 'P', name: '' });
    c.execute({});
    return parse;
  }

  #result(): ResultLike<R> {
    return (this as unknown as { _result: ResultLike<R> })._result;
  }

  handleRowDescription(msg: { fields: unknown }): void {
    if (this.#phase === INSERT) this.#result().addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown }): void {
    if (this.#phase !== INSERT) return;
    const r = this.#result();
    r.addRow(r.parseRow(msg.fields));
  }

  handleCommandComplete(): void {
    this.#phase++;
  }

  // pg ends a query at its error (no ReadyForQuery reaches it after one).
  handleError(err: Error): void {
    if (this.#phase < NOTIFY) {
      this.#finish(err);
      return;
    }
    this.#notifyError = err;
    this.#finish(null);
  }

  handleReadyForQuery(c: pg.Connection): void {
    // The NOTIFY's statement is now held by this connection: later enqueues bind it directly.
    if (this.#notifyParsed && !this.#notifyError) {
      (c as unknown as Wire).parsedStatements[this.#notify.name] = this.#notify.text;
    }
    this.#finish(null);
  }

  /**
   * Ends the query through `this.callback`, never around it: with query_timeout set the client
   * has wrapped it to clear its timer, which would otherwise fire queryTimeoutMs later and, on a
   * pipelined client, destroy the connection under whatever then runs on it.
   */
  #finish(err: Error | null): void {
    const callback = (this as unknown as { callback?: (err: Error | null, out?: InsertCommitNotifyResult<R>) => void }).callback;
    if (err) callback?.(err);
    else callback?.(null, { rows: this.#result().rows, notifyError: this.#notifyError });
  }
}

/** A text[] literal (`{"a","b"}`): bound as one string, as pg would serialise the array. */
export function textArrayLiteral(items: readonly string[]): string {
  return `{${items.map((i) => `"${i.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`).join(',')}}`;
}

/** Whether `client` is a node-postgres client this module can drive (same pg copy). */
/** A plain pg client: not a caller's pool-like object, nor one through a transaction pooler (which must not name statements). */
export function canInsertCommitNotify(client: unknown): client is pg.ClientBase {
  return client instanceof pg.Client && !(client instanceof UnnamedStatementClient);
}

export function insertCommitNotify<R>(client: pg.ClientBase, insert: Named, notify: Named): Promise<InsertCommitNotifyResult<R>> {
  return new Promise((resolve, reject) => {
    void client.query(new InsertCommitNotify<R>(insert, notify, (err, out) => (err ? reject(err) : resolve(out!))));
  });
}
