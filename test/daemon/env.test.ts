// The daemon's configuration parser (no database): defaults, coercion, flags
// over env, and errors that name the setting instead of falling back.

import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/daemon/env.ts';
import { parseFlags } from '../../src/daemon/flags.ts';

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('has documented defaults and leaves engine defaults to the engine', () => {
    const c = loadConfig({}, {}, '/srv/app');
    expect(c).toMatchObject({
      databaseUrl: undefined,
      port: 8080,
      host: '127.0.0.1',
      apiToken: undefined,
      schema: 'baton',
      drainMs: 10_000,
      dataDir: '/srv/app/.baton-data',
      pgPort: undefined,
      handlersPath: undefined,
      demoHandlers: true,
      bodyLimitBytes: 1_048_576,
      http: { requestTimeoutMs: 30_000, maxConnectionsPerAddress: 128 },
      allowedHosts: undefined,
      logLevel: 'info',
      pooler: 'none',
      directUrl: undefined,
    });
    expect(c.engine).toEqual({
      schema: 'baton',
      queues: { default: 10 },
      fairness: 'tenant',
      claimIntoRunning: true,
      drainMs: 10_000,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('coerces values, parses queues and booleans properly ("false" is false), resolves paths', () => {
    const c = loadConfig(
      {
        PORT: '9090',
        BATON_QUEUES: 'default:10, emails:4',
        BATON_CLAIM_INTO_RUNNING: 'false',
        BATON_DEMO_HANDLERS: '0',
        BATON_LEASE_MS: '2000',
        BATON_LEADER: 'no',
        BATON_LEADER_LEASE_MS: '3000',
        BATON_HANDLERS: './h.ts',
        DATABASE_URL: 'postgres://u:p@db:5432/x',
        LOG_LEVEL: 'debug',
      },
      {},
      '/srv/app',
    );
    expect(c.port).toBe(9090);
    expect(c.engine).toMatchObject({
      queues: { default: 10, emails: 4 },
      claimIntoRunning: false,
      leaseMs: 2000,
      leader: false,
      leaderLeaseMs: 3000,
    });
    expect(c.demoHandlers).toBe(false);
    expect(c.handlersPath).toBe('/srv/app/h.ts');
    expect(c.databaseUrl).toBe('postgres://u:p@db:5432/x');
  });

  it('reads the HTTP bounds: request timeout and connections per client address (0: no cap)', () => {
    expect(loadConfig({ BATON_REQUEST_TIMEOUT_MS: '5000', BATON_MAX_CONNECTIONS_PER_IP: '0' }).http).toEqual({
      requestTimeoutMs: 5000,
      maxConnectionsPerAddress: 0,
    });
    expect(loadConfig({}, parseFlags(['--max-connections-per-ip', '8'])).http.maxConnectionsPerAddress).toBe(8);
  });

  it('reads BATON_ALLOWED_HOSTS as a comma list of names (and name:port), or * for no Host check', () => {
    expect(loadConfig({ BATON_ALLOWED_HOSTS: 'baton.internal, proxy.example:8443,' }).allowedHosts).toEqual([
      'baton.internal',
      'proxy.example:8443',
    ]);
    expect(loadConfig({}, parseFlags(['--allowed-hosts', '*'])).allowedHosts).toBe('*');
  });

  it('lets flags win over the environment and treats empty variables as unset', () => {
    const c = loadConfig({ PORT: '9090', HOST: '' }, parseFlags(['--port', '7070', '--queues=']));
    expect(c.port).toBe(7070);
    expect(c.host).toBe('127.0.0.1');
    expect(c.engine.queues).toEqual({}); // an explicit empty flag: produce only
  });

  it('reads BATON_QUEUES= (empty) as produce only, like --queues=, and unset as the default', () => {
    // The documented rule (docs/configuration.md): an empty BATON_QUEUES starts no worker.
    expect(loadConfig({ BATON_QUEUES: '' }).engine.queues).toEqual({});
    expect(loadConfig({ BATON_QUEUES: ' ' }).engine.queues).toEqual({});
    expect(loadConfig({}).engine.queues).toEqual({ default: 10 });
    // Other settings still read an empty variable as unset.
    expect(loadConfig({ BATON_QUEUES: '', PORT: '' }).port).toBe(8080);
    // The flag still wins over the variable, either way.
    expect(loadConfig({ BATON_QUEUES: '' }, parseFlags(['--queues', 'emails:2'])).engine.queues).toEqual({ emails: 2 });
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT (--port)'],
    [{ PORT: '65536' }, 'PORT (--port)'],
    [{ PORT: '80.5' }, 'PORT (--port)'],
    [{ BATON_QUEUES: 'default' }, 'BATON_QUEUES (--queues)'],
    [{ BATON_QUEUES: 'default:0' }, 'BATON_QUEUES (--queues)'],
    [{ BATON_QUEUES: 'bad name:1' }, 'BATON_QUEUES (--queues)'],
    [{ BATON_QUEUES: 'a//b:1' }, 'BATON_QUEUES (--queues)'],
    [{ BATON_QUEUES: 'emails/:1' }, 'BATON_QUEUES (--queues)'],
    [{ BATON_CLAIM_INTO_RUNNING: 'maybe' }, 'BATON_CLAIM_INTO_RUNNING (--claim-into-running)'],
    [{ BATON_DISPATCH: 'push' }, 'BATON_DISPATCH (--dispatch)'],
    [{ BATON_FAIRNESS: 'weighted' }, 'BATON_FAIRNESS (--fairness)'],
    [{ BATON_SCHEMA: 'Bad-Schema' }, 'BATON_SCHEMA (--schema)'],
    [{ BATON_LEASE_MS: '50' }, 'BATON_LEASE_MS (--lease-ms)'],
    [{ BATON_LEADER: 'sometimes' }, 'BATON_LEADER (--leader)'],
    [{ BATON_LEADER_LEASE_MS: '100' }, 'BATON_LEADER_LEASE_MS (--leader-lease-ms)'],
    [{ BATON_BACKOFF_BASE_MS: '5000', BATON_BACKOFF_CAP_MS: '1000' }, 'BATON_BACKOFF_CAP_MS (--backoff-cap-ms)'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL (--log-level)'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL (--database-url)'],
    [{ BATON_API_TOKEN: 'short' }, 'BATON_API_TOKEN (--api-token)'],
    [{ BATON_ALLOWED_HOSTS: 'ok.example,bad host' }, 'BATON_ALLOWED_HOSTS (--allowed-hosts): "bad host" is not a host name'],
    [{ BATON_ALLOWED_HOSTS: 'http://x.example' }, 'BATON_ALLOWED_HOSTS (--allowed-hosts)'],
    [{ BATON_REQUEST_TIMEOUT_MS: '50' }, 'BATON_REQUEST_TIMEOUT_MS (--request-timeout-ms)'],
    [{ BATON_REQUEST_TIMEOUT_MS: 'soon' }, 'BATON_REQUEST_TIMEOUT_MS (--request-timeout-ms)'],
    [{ BATON_MAX_CONNECTIONS_PER_IP: '-1' }, 'BATON_MAX_CONNECTIONS_PER_IP (--max-connections-per-ip)'],
    [{ BATON_MAX_CONNECTIONS_PER_IP: '2.5' }, 'BATON_MAX_CONNECTIONS_PER_IP (--max-connections-per-ip)'],
  ])('refuses %j naming %s', (env, name) => {
    const err = configError(() => loadConfig(env));
    expect(err.message).toContain(name);
  });

  it('BATON_POOLER needs DATABASE_URL, BATON_DIRECT_URL needs BATON_POOLER, and neither URL is repeated in an error', () => {
    const url = 'postgres://app:hunter2@db:5432/app';
    expect(configError(() => loadConfig({ BATON_POOLER: 'transaction' }))).toMatchObject({ setting: 'BATON_POOLER' });
    expect(configError(() => loadConfig({ DATABASE_URL: url, BATON_DIRECT_URL: url }))).toMatchObject({ setting: 'BATON_DIRECT_URL' });
    const bad = configError(() =>
      loadConfig({ DATABASE_URL: url, BATON_POOLER: 'transaction', BATON_DIRECT_URL: 'mysql://app:hunter2@db/app' }),
    );
    expect(bad.message).toContain('BATON_DIRECT_URL');
    expect(bad.message).not.toContain('hunter2');
    expect(configError(() => loadConfig({ DATABASE_URL: url, BATON_POOLER: 'session' })).message).toContain('must be none or transaction');
    expect(loadConfig({ DATABASE_URL: url, BATON_POOLER: 'transaction', BATON_DIRECT_URL: url })).toMatchObject({
      pooler: 'transaction',
      directUrl: url,
    });
  });

  it('reads only the settings of the command: a bad PORT in a shared environment does not stop `migrate`', () => {
    const c = loadConfig({ PORT: 'eighty', BATON_QUEUES: 'nonsense', BATON_SCHEMA: 'jobs' }, {}, '/srv/app', 'migrate');
    expect(c).toMatchObject({ port: 8080, schema: 'jobs', engine: { queues: { default: 10 } } });
    expect(configError(() => loadConfig({ BATON_SCHEMA: 'Bad-Schema' }, {}, '/srv/app', 'migrate')).message).toContain(
      'BATON_SCHEMA (--schema)',
    );
  });

  it('never echoes secrets in its messages', () => {
    expect(configError(() => loadConfig({ BATON_API_TOKEN: 'sekret' })).message).not.toContain('sekret');
    expect(configError(() => loadConfig({ DATABASE_URL: 'pass:word@nohost' })).message).not.toContain('word');
  });
});

describe('parseFlags', () => {
  it('refuses unknown flags and stray arguments', () => {
    expect(configError(() => parseFlags(['--prot', '1'])).message).toMatch(/--prot/);
    expect(configError(() => parseFlags(['extra'])).message).toMatch(/extra/);
  });

  it("takes only the command's setting flags", () => {
    expect(parseFlags(['--schema', 'jobs'], 'migrate')).toMatchObject({ schema: 'jobs' });
    expect(configError(() => parseFlags(['--port=1'], 'migrate')).message).toBe(
      '--port is a flag of "baton serve", not of "baton migrate" (see baton migrate --help)',
    );
  });
});
