// Every method of every store in src/driver (LeaderStore, OutboxStore, ScheduleStore,
// WorkflowStore, ApiKeyStore) and of its PostgreSQL implementation is called directly, as
// `.<method>(`, by some test under test/, so a new store method without a test fails the
// suite (the Executor's own check, stricter, is executor-methods.test.ts). Store methods are
// named <resource><Verb> (docs/testing.md), so a name found in a test is that store's method.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PgApiKeyStore } from '../../src/db/pg/api-key-store.ts';
import { PgLeaderStore } from '../../src/db/pg/pg-leader.ts';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import { PgScheduleStore } from '../../src/db/pg/pg-schedules.ts';
import { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';

const here = fileURLToPath(import.meta.url);
const TEST_DIR = path.resolve(path.dirname(here), '..');
const DRIVER_DIR = path.resolve(TEST_DIR, '../src/driver');

const STORES: Array<{ file: string; iface: string; prefix: string; impl: { prototype: object } }> = [
  { file: 'leader-store.ts', iface: 'LeaderStore', prefix: 'leader', impl: PgLeaderStore },
  { file: 'outbox-store.ts', iface: 'OutboxStore', prefix: 'outbox', impl: PgOutboxStore },
  { file: 'schedule-store.ts', iface: 'ScheduleStore', prefix: 'schedule', impl: PgScheduleStore },
  { file: 'workflow-store.ts', iface: 'WorkflowStore', prefix: 'workflow', impl: PgWorkflowStore },
  { file: 'api-key-store.ts', iface: 'ApiKeyStore', prefix: 'apiKey', impl: PgApiKeyStore },
];

/** Method names of `export interface <name> { ... }`, one signature starting per line. */
function interfaceMethods(file: string, name: string): string[] {
  const src = readFileSync(path.join(DRIVER_DIR, file), 'utf8');
  const body = new RegExp(`^export interface ${name} \\{\\n([\\s\\S]*?)^\\}`, 'm').exec(src)?.[1];
  if (body === undefined) throw new Error(`no \`export interface ${name} { ... }\` block in src/driver/${file}`);
  return [...body.matchAll(/^ {2}(\w+)\s*[<(]/gm)].map((m) => m[1]!);
}

/** Public methods of an implementation (not # private ones, which are not on the prototype by name). */
function implementationMethods(impl: { prototype: object }): string[] {
  return Object.getOwnPropertyNames(impl.prototype).filter(
    (n) => n !== 'constructor' && typeof Object.getOwnPropertyDescriptor(impl.prototype, n)?.value === 'function',
  );
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : testFiles(p);
    return /\.ts$/.test(e.name) && p !== here ? [p] : [];
  });
}

/** The tests' code, comment-only lines dropped (a method named in a comment is not tested). */
const code = testFiles(TEST_DIR)
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n')
  .split('\n')
  .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
  .join('\n');

describe('store methods', () => {
  it.each(STORES.map((s) => [s.iface, s] as const))('every %s method is named <resource><Verb> and called directly in a test', (_, s) => {
    const declared = interfaceMethods(s.file, s.iface);
    expect(declared.length, `methods read from interface ${s.iface}`).toBeGreaterThan(0);
    expect(
      declared.filter((n) => !n.startsWith(s.prefix) || !/^[A-Z]/.test(n.slice(s.prefix.length))),
      `${s.iface} methods not named ${s.prefix}<Verb>`,
    ).toEqual([]);
    const impl = implementationMethods(s.impl);
    expect(
      declared.filter((n) => !impl.includes(n)),
      `interface methods the implementation lacks`,
    ).toEqual([]);
    const methods = [...new Set([...declared, ...impl])];
    const untested = methods.filter((n) => !new RegExp(`\\.${n}\\(`).test(code));
    expect(untested, `${s.iface} methods with no direct \`.<method>(\` call in test/`).toEqual([]);
  });

  it('every Executor method is named <resource><Verb>, its resource one of the tables it serves', () => {
    const RESOURCES = ['job', 'queue', 'flow', 'worker', 'stats', 'health'];
    const declared = interfaceMethods('executor.ts', 'Executor');
    expect(declared.length).toBeGreaterThan(0);
    const named = (n: string) => RESOURCES.some((r) => n.startsWith(r) && /^[A-Z]/.test(n.slice(r.length)));
    expect(declared.filter((n) => !named(n))).toEqual([]);
  });

  it('the parse sees through comments: a method only named in a comment does not count', () => {
    const sample = ['// store.outboxNothing(1)', ' * store.outboxNothing(2)', 'store.outboxSomething(3)']
      .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
      .join('\n');
    expect(/\.outboxNothing\(/.test(sample)).toBe(false);
    expect(/\.outboxSomething\(/.test(sample)).toBe(true);
  });
});
