// Unit tests (no database) of the bench's flags: a full run drains 100,000 jobs on a server
// the bench starts, --quick stays small, and --server takes cluster, embedded or a URL only.

import { describe, expect, it } from 'vitest';
import { parseBenchArgs } from '../../bench/args.ts';

describe('parseBenchArgs', () => {
  it('runs a full bench on a cluster of its own, 100,000 jobs per drain, every peer', () => {
    const a = parseBenchArgs([]);
    expect(a.server).toBe('cluster');
    expect(a.jobs).toBe(100_000);
    expect(a.peers).toEqual(['graphile', 'pgboss']);
    expect(a.runs).toBe(5);
  });

  it('keeps --quick small and without peers', () => {
    const a = parseBenchArgs(['--quick']);
    expect(a.jobs).toBe(2_000);
    expect(a.peers).toEqual([]);
    expect(a.runs).toBe(1);
    expect(a.outDir).toBe('results/quick');
  });

  it('takes embedded or a postgres URL for --server, and refuses anything else', () => {
    expect(parseBenchArgs(['--server', 'embedded']).server).toBe('embedded');
    expect(parseBenchArgs(['--server', 'postgres://u@h:5/db']).server).toEqual({ url: 'postgres://u@h:5/db' });
    expect(() => parseBenchArgs(['--server', 'docker'])).toThrow(/--server/);
  });
});
