// Multi-host connection strings, as libpq spells them (postgres://u@h1:5432,h2:5433/db?
// target_session_attrs=read-write), which node-postgres does not parse: every session Baton
// opens from one lands only on a host that is writable, trying the hosts in turn.
// Invariant: with target 'read-write' or 'primary', a connect() that resolves is to a server
// that said at start-up (or, before PostgreSQL 14, answered) that it is not in recovery.

import pg from 'pg';
import { z } from 'zod';
import { SESSION_ROLE_SQL } from './queries/session-role.ts';

export interface PgHost {
  host: string;
  port: number;
}

/** Which hosts a session may land on (libpq's target_session_attrs; Baton refuses the rest). */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary';

/** The extra key a ClientConfig carries when it names several hosts (pg ignores unknown keys). */
export interface MultiHostConfig extends pg.ClientConfig {
  batonHosts: { hosts: PgHost[]; target: TargetSessionAttrs };
}

const URL_PATTERN = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(.*)$/;
const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[^:,[\]\s]+)(?::(\d{1,5}))?$/, 'each host must be host or host:port')
  .transform((s) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:]+)(?::(\d+))?$/.exec(s)!;
    return { host: decodeHost(m[1]!.replace(/^\[|\]$/g, '')), port: m[2] === undefined ? 5432 : Number(m[2]) };
  })
  .refine((h) => h.port >= 1 && h.port <= 65_535, 'port must be 1-65535');
/** A percent-encoded host as libpq reads it: %2Fvar%2Frun%2Fpostgresql is a unix-socket directory. */
function decodeHost(host: string): string {
  try {
    return decodeURIComponent(host);
  } catch {
    return host; // not valid percent-encoding: left as written, the connect names it
  }
}

const targetSchema = z.enum(['any', 'read-write', 'primary'], {
  error: 'target_session_attrs must be read-write, primary or any (Baton writes: read-write is the default)',
});

/** A connection string whose hosts or target_session_attrs are not what Baton can use. */
export class ConnectionStringError extends Error {
  readonly code = 'INVALID_CONFIG';
}

/**
 * The ClientConfig for `url`: `{ connectionString }` as given when it names one host and no
 * target_session_attrs (pg reads it as it always has), else a MultiHostConfig whose
 * connectionString names the first host (for user, password, database, sslmode...) and whose
 * sessions pick a host as `target` says. `setting` names the option in error messages.
 * @throws ConnectionStringError naming `setting` and what is wrong (never the password).
 */
export function parseConnectionString(url: string, setting = 'connectionString'): pg.ClientConfig | MultiHostConfig {
  const m = URL_PATTERN.exec(url);
  if (!m) return { connectionString: url };
  const [, scheme, userinfo, hostList, rest] = m as unknown as [string, string, string | undefined, string, string];
  const q = rest.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : rest.slice(q + 1));
  const rawTarget = params.get('target_session_attrs');
  const parts = hostList.split(',');
  if (parts.length === 1 && rawTarget === null) return { connectionString: url };
  const fail = (why: string) => new ConnectionStringError(`${setting}: ${why}`);
  const hosts: PgHost[] = [];
  for (const part of parts) {
    const h = hostPort.safeParse(part);
    if (!h.success) {
      // An '@' after the host list: a '/', '?' or '#' in the user or password ended the user
      // info early, so `part` is the user and the start of the password: never echo it.
      if (rest.includes('@')) throw fail("cannot read the hosts: percent-encode any '/', '?', '#' or '@' in the user or password");
      throw fail(`bad host "${part}": ${h.error.issues[0]?.message}`);
    }
    hosts.push(h.data);
  }
  const target = targetSchema.safeParse(rawTarget ?? 'read-write');
  if (!target.success) throw fail(target.error.issues[0]?.message ?? 'bad target_session_attrs');
  params.delete('target_session_attrs');
  const path = q < 0 ? rest : rest.slice(0, q);
  const query = params.toString();
  const first = hosts[0]!;
  // A socket directory goes back encoded: pg reads a bare '/' there as the start of the path.
  const firstHost = first.host.startsWith('/') ? encodeURIComponent(first.host) : first.host.includes(':') ? `[${first.host}]` : first.host;
  const single = `${scheme}${userinfo === undefined ? '' : `${userinfo}@`}${firstHost}:${first.port}${path}${query ? `?${query}` : ''}`;
  return { connectionString: single, batonHosts: { hosts, target: target.data } };
}

export function isMultiHost(config: pg.ClientConfig): config is MultiHostConfig {
  return (config as Partial<MultiHostConfig>).batonHosts !== undefined;
}

/** A new client for `config`: a PrimaryClient when it names several hosts or a target. */
export function newClient(config: pg.ClientConfig): pg.Client {
  return isMultiHost(config) ? new PrimaryClient(config) : new pg.Client(config);
}

/** The hosts' index that last proved writable, per host list: tried first next time. */
const lastGood = new Map<string, number>();

/** No host of the list was writable (each one's reason in `errors`); Baton reports it as DB_UNAVAILABLE. */
export class NoPrimaryError extends AggregateError {
  readonly code = 'NO_PRIMARY';
}

/**
 * A pg.Client that connects to the first host of its list (the last writable one first) that
 * is writable. Each host is tried with a short probe session, then this client connects to the
 * chosen one and checks it again at start-up: a host demoted in between fails the connect
 * (never a session on a standby), and the next connect probes again.
 */
export class PrimaryClient extends pg.Client {
  readonly #config: MultiHostConfig;
  #hotStandby: boolean | null = null;
  #readOnly: boolean | null = null;

  constructor(config: MultiHostConfig) {
    super(config);
    this.#config = config;
    this.connection.on('parameterStatus', (msg: { parameterName: string; parameterValue: string }) => {
      if (msg.parameterName === 'in_hot_standby') this.#hotStandby = msg.parameterValue === 'on';
      if (msg.parameterName === 'default_transaction_read_only') this.#readOnly = msg.parameterValue === 'on';
    });
  }

  // pg-pool connects with a callback, everything else of Baton's with the promise.
  override connect(): Promise<pg.Client>;
  override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
  override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | undefined {
    const p = this.#connectWritable().then(() => this as pg.Client);
    if (!callback) return p;
    p.then(
      (c) => (callback as (err: null, c: pg.Client) => void)(null, c),
      (err: Error) => (callback as (err: Error) => void)(err),
    );
    return undefined;
  }

  async #connectWritable(): Promise<void> {
    const { hosts, target } = this.#config.batonHosts;
    const key = hosts.map((h) => `${h.host}:${h.port}`).join(',');
    const chosen = target === 'any' && hosts.length === 1 ? hosts[0]! : await probeHosts(this.#config, key);
    pointAt(this, chosen);
    await super.connect();
    if (target === 'any') return;
    const ok = sessionFits(target, this.#hotStandby, this.#readOnly) ?? (await fitsByQuery(this, target));
    if (!ok) {
      lastGood.delete(key);
      await this.end().catch(() => undefined);
      const why = `${chosen.host}:${chosen.port} is no longer ${target === 'primary' ? 'a primary' : 'writable'}`;
      throw new NoPrimaryError([new Error(why)], why);
    }
  }
}

/** Whether the start-up parameters prove the session fits `target` (null: the server did not report them, before PostgreSQL 14). */
function sessionFits(target: TargetSessionAttrs, hotStandby: boolean | null, readOnly: boolean | null): boolean | null {
  if (target === 'any') return true;
  if (hotStandby === null) return null;
  if (hotStandby) return false;
  return target === 'primary' || readOnly === false || readOnly === null;
}

async function fitsByQuery(client: pg.Client, target: TargetSessionAttrs): Promise<boolean> {
  const r = await client.query<{ recovery: boolean; read_only: boolean }>(SESSION_ROLE_SQL);
  const row = r.rows[0]!;
  return !row.recovery && (target === 'primary' || !row.read_only);
}

/** The first host (the last good one first, then the list in order) whose probe session fits. */
async function probeHosts(config: MultiHostConfig, key: string): Promise<PgHost> {
  const { hosts, target } = config.batonHosts;
  // 'any' takes the hosts in their order, as libpq does; the others start where a writable one was.
  const start = target === 'any' ? 0 : (lastGood.get(key) ?? 0);
  const order = hosts.map((_, i) => (start + i) % hosts.length);
  const errors: unknown[] = [];
  for (const i of order) {
    const h = hosts[i]!;
    const probe = new PrimaryProbe(config, h);
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      const fits = sessionFits(target, probe.hotStandby, probe.readOnly) ?? (await fitsByQuery(probe, target));
      if (fits) {
        if (target !== 'any') lastGood.set(key, i);
        return h;
      }
      errors.push(new Error(`${h.host}:${h.port} is ${probe.hotStandby === false ? 'read-only' : 'in recovery'}`));
    } catch (err) {
      errors.push(err);
    } finally {
      void probe.end().catch(() => undefined);
    }
  }
  lastGood.delete(key);
  throw new NoPrimaryError(errors, `no ${target} server among ${key}`);
}

/** A plain client to one host of the list, that keeps the start-up parameters a PrimaryClient decides by. */
class PrimaryProbe extends pg.Client {
  hotStandby: boolean | null = null;
  readOnly: boolean | null = null;
  constructor(config: MultiHostConfig, to: PgHost) {
    super({ ...config, application_name: 'baton-probe' });
    pointAt(this, to);
    this.connection.on('parameterStatus', (msg: { parameterName: string; parameterValue: string }) => {
      if (msg.parameterName === 'in_hot_standby') this.hotStandby = msg.parameterValue === 'on';
      if (msg.parameterName === 'default_transaction_read_only') this.readOnly = msg.parameterValue === 'on';
    });
  }
}

/** Points a client not yet connected at `to`: pg reads host and port from the connection string, which names the first host. */
function pointAt(client: pg.Client, to: PgHost): void {
  const c = client as unknown as { host: string; port: number; connectionParameters: { host: string; port: number } };
  c.host = c.connectionParameters.host = to.host;
  c.port = c.connectionParameters.port = to.port;
}
