// Every Executor method has a direct call `ex.<method>(` in the conformance files
// (test/db/executor-*.test.ts), so a new query without a test fails the suite.

import { readdirSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';

const here = fileURLToPath(import.meta.url);
const dir = new URL('./', import.meta.url);

/** Method names of `interface Executor` in src/driver/executor.ts, one signature per line. */
function interfaceMethods(): string[] {
  const src = readFileSync(new URL('../../src/driver/executor.ts', import.meta.url), 'utf8');
  const body = /^export interface Executor \{\n([\s\S]*?)^\}/m.exec(src)?.[1];
  if (body === undefined) throw new Error('no `export interface Executor { ... }` block in src/driver/executor.ts');
  return [...body.matchAll(/^\s*(\w+)\s*[<(]/gm)].map((m) => m[1]!);
}

/** Public methods of the implementation: one the interface parse missed still needs its test. */
function implementationMethods(): string[] {
  return Object.getOwnPropertyNames(PgExecutor.prototype).filter(
    (n) => n !== 'constructor' && typeof Object.getOwnPropertyDescriptor(PgExecutor.prototype, n)?.value === 'function',
  );
}

/** The conformance files' code, comment-only lines dropped (a method named in a comment is not tested). */
function conformanceCode(): string {
  return readdirSync(dir)
    .filter((f) => /^executor-.*\.test\.ts$/.test(f) && f !== basename(here))
    .map((f) => readFileSync(new URL(f, dir), 'utf8'))
    .join('\n')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n');
}

it('every Executor method is called directly, as ex.<method>(...), in a conformance file', () => {
  const declared = interfaceMethods();
  const code = conformanceCode();
  const methods = [...new Set([...declared, ...implementationMethods()])];
  const untested = methods.filter((n) => !new RegExp(`\\bex\\.${n}\\(`).test(code));
  expect(untested, 'Executor methods with no direct `ex.<method>(` call in test/db/executor-*.test.ts').toEqual([]);
  // The parse itself: it found the interface's methods, each one PgExecutor's.
  expect(declared.length, 'methods read from interface Executor').toBeGreaterThan(0);
  expect(
    declared.filter((n) => !implementationMethods().includes(n)),
    'interface methods PgExecutor lacks',
  ).toEqual([]);
});
