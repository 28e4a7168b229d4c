// The daemon's sharding settings (no database): BATON_CLUSTERS, BATON_QUEUE_ROUTES and
// BATON_DEFAULT_CLUSTER read into routing, and every mistake a ConfigError naming its setting.

import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/daemon/env.ts';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env, {}, '/srv');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const CLUSTERS = 'a=postgres://u:secret@h1:5432/db,b=postgres://u@h2:5432,h3:5432/db?target_session_attrs=read-write';

describe('sharding settings', () => {
  it('reads clusters (a multi-host URL keeps its commas), routes and the default cluster', () => {
    const c = loadConfig({ BATON_CLUSTERS: CLUSTERS, BATON_QUEUE_ROUTES: 'emails=a, reports=b', BATON_QUEUES: 'emails:2,reports:1' });
    expect(c.sharding).toEqual({
      clusters: { a: 'postgres://u:secret@h1:5432/db', b: 'postgres://u@h2:5432,h3:5432/db?target_session_attrs=read-write' },
      routes: { emails: 'a', reports: 'b' },
      defaultCluster: undefined,
    });
    expect(loadConfig({}).sharding).toBeUndefined();
  });

  it('names the bad setting, never repeating a URL', () => {
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [{ BATON_CLUSTERS: 'A=postgres://h/db', BATON_QUEUES: '' }, 'BATON_CLUSTERS', /cluster name "A"/],
      [{ BATON_CLUSTERS: 'a=http://u:secret@h/db', BATON_QUEUES: '' }, 'BATON_CLUSTERS', /cluster a: must be a postgres/],
      [{ BATON_CLUSTERS: 'postgres://u:secret@h/db', BATON_QUEUES: '' }, 'BATON_CLUSTERS', /an entry is not name=URL/],
      [
        { BATON_CLUSTERS: CLUSTERS, BATON_QUEUE_ROUTES: 'emails=c', BATON_QUEUES: '' },
        'BATON_QUEUE_ROUTES',
        /queue emails goes to cluster "c"/,
      ],
      [{ BATON_CLUSTERS: CLUSTERS, BATON_DEFAULT_CLUSTER: 'z', BATON_QUEUES: '' }, 'BATON_DEFAULT_CLUSTER', /"z"/],
      [{ BATON_CLUSTERS: CLUSTERS, BATON_QUEUES: 'emails:1' }, 'BATON_QUEUE_ROUTES', /works emails, which no route names/],
      [{ BATON_QUEUE_ROUTES: 'emails=a' }, 'BATON_QUEUE_ROUTES', /needs BATON_CLUSTERS/],
      [
        { BATON_CLUSTERS: CLUSTERS, DATABASE_URL: 'postgres://h/db', BATON_QUEUES: '' },
        'BATON_CLUSTERS',
        /either DATABASE_URL or BATON_CLUSTERS/,
      ],
    ];
    for (const [env, setting, message] of cases) {
      const err = configError(env);
      expect(err.setting, JSON.stringify(env)).toBe(setting);
      expect(err.message).toMatch(message);
      expect(err.message).not.toContain('secret');
    }
  });

  it('sends unrouted queues to the default cluster', () => {
    const c = loadConfig({ BATON_CLUSTERS: CLUSTERS, BATON_DEFAULT_CLUSTER: 'b', BATON_QUEUES: 'anything:3' });
    expect(c.sharding?.defaultCluster).toBe('b');
  });
});
