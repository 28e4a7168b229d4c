// Dependencies point one way. Each folder of src/ has a floor (the folders it may import):
// types imports nothing, driver only types, core and db only driver and types, and no two
// folders reach each other; client sees only the AppType type. This test reads every import
// of src/ and fails on one that breaks a floor, on a cycle between folders, and on core's
// forbidden packages or process.env / process.exit.

import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { listSourceFiles, packageName, resolveRelative, type ScanResult, scanFile, scanSource } from './helpers/import-scan.ts';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const CORE = path.join(SRC, 'core');
const CLIENT = path.join(SRC, 'client');
const EDGE_DIRS = [path.join(SRC, 'http'), path.join(SRC, 'daemon')];

const rel = (f: string) => path.relative(path.join(SRC, '..'), f);
const inside = (file: string, dir: string) => file === dir || file.startsWith(dir + path.sep);

/** Packages core may not import, even type-only (it works through structural seams). */
function forbiddenInCore(pkg: string): boolean {
  return (
    pkg === 'hono' ||
    pkg.startsWith('@hono/') ||
    pkg === 'pino' ||
    pkg.startsWith('pino-') ||
    pkg === 'pg' ||
    pkg.startsWith('pg-') ||
    pkg === '@types/pg' ||
    // process.env / process.exit must not be reachable through the module either.
    pkg === 'process' ||
    pkg === 'node:process'
  );
}

/** Violations of the core rules in one file's scan. */
function coreViolations(file: string, scan: ScanResult): string[] {
  const out: string[] = [];
  for (const imp of scan.imports) {
    const target = resolveRelative(file, imp.specifier);
    if (target === undefined) {
      if (forbiddenInCore(packageName(imp.specifier))) out.push(`${rel(file)}:${imp.line} imports '${imp.specifier}'`);
    } else if (EDGE_DIRS.some((d) => inside(target, d))) {
      out.push(`${rel(file)}:${imp.line} imports '${imp.specifier}' (src/http and src/daemon sit above core)`);
    }
  }
  for (const use of scan.processUses) out.push(`${rel(file)}:${use.line} uses ${use.what}`);
  return out;
}

/** Violations of the client rule: only hono/client, type-only imports from src/http, and its own files. */
function clientViolations(file: string, scan: ScanResult): string[] {
  const out: string[] = [];
  for (const imp of scan.imports) {
    const target = resolveRelative(file, imp.specifier);
    if (target === undefined) {
      if (imp.specifier !== 'hono/client') out.push(`${rel(file)}:${imp.line} imports '${imp.specifier}'`);
    } else if (inside(target, path.join(SRC, 'http'))) {
      if (!imp.typeOnly) out.push(`${rel(file)}:${imp.line} imports '${imp.specifier}' at runtime (use import type)`);
    } else if (!inside(target, CLIENT)) {
      out.push(`${rel(file)}:${imp.line} imports '${imp.specifier}' (outside src/client)`);
    }
  }
  return out;
}

/** Resolves a relative specifier to an existing source file, if any. */
function toFile(target: string): string | undefined {
  for (const c of [target, `${target}.ts`, path.join(target, 'index.ts')]) {
    if (existsSync(c) && c.endsWith('.ts')) return c;
  }
  return undefined;
}

describe('src/core', () => {
  const files = listSourceFiles(CORE);

  it('has source files to check', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it('imports no hono, pino, pg, pg-listen, src/http or src/daemon, and never touches process.env / process.exit', () => {
    const violations = files.flatMap((f) => coreViolations(f, scanFile(f)));
    expect(violations).toEqual([]);
  });

  it('cannot reach hono, pino, src/http or src/daemon at runtime through the modules it imports', () => {
    // Follows runtime (non-type-only) relative imports out of core, e.g. into src/db.
    const violations: string[] = [];
    const seen = new Set<string>();
    const walk = (file: string, chain: string[]) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const imp of scanFile(file).imports) {
        if (imp.typeOnly) continue;
        const target = resolveRelative(file, imp.specifier);
        const via = [...chain, rel(file)].join(' -> ');
        if (target === undefined) {
          const pkg = packageName(imp.specifier);
          if (pkg === 'hono' || pkg.startsWith('@hono/') || pkg === 'pino') violations.push(`${via} imports '${imp.specifier}'`);
          continue;
        }
        if (EDGE_DIRS.some((d) => inside(target, d))) {
          violations.push(`${via} imports '${imp.specifier}'`);
          continue;
        }
        const next = toFile(target);
        if (next) walk(next, [...chain, rel(file)]);
      }
    };
    for (const f of files) walk(f, []);
    expect(violations).toEqual([]);
  });
});

/** The folder of src/ a file belongs to; '(root)' for the files directly under src/ (the entry and wiring). */
function folderOf(file: string): string {
  const parts = path.relative(SRC, file).split(path.sep);
  return parts.length > 1 ? parts[0]! : '(root)';
}

/**
 * The folders each folder may import besides itself, type-only imports included. '(root)' is
 * src/index.ts (the public entry), src/create-baton.ts (the engine wired to node-postgres) and
 * their neighbours; http reads the public entry's types through it.
 */
const FLOORS: Record<string, readonly string[]> = {
  types: [],
  driver: ['types'],
  core: ['driver', 'types'],
  db: ['driver', 'types'],
  publishers: ['core', 'driver', 'types'],
  '(root)': ['core', 'db', 'driver', 'publishers', 'types'],
  http: ['(root)', 'core', 'driver', 'types'],
  client: ['http'],
  daemon: ['(root)', 'core', 'db', 'driver', 'http', 'publishers', 'types'],
};

/** Folder-level edges of a set of files' relative imports: from -> to -> the first import seen. */
function folderEdges(files: Array<{ file: string; scan: ScanResult }>): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const { file, scan } of files) {
    const from = folderOf(file);
    for (const imp of scan.imports) {
      const target = resolveRelative(file, imp.specifier);
      if (target === undefined || !inside(target, SRC.replace(/\/$/, ''))) continue;
      const to = folderOf(target);
      if (to === from) continue;
      const out = edges.get(from) ?? new Map<string, string>();
      if (!out.has(to)) out.set(to, `${rel(file)}:${imp.line} imports '${imp.specifier}'`);
      edges.set(from, out);
    }
  }
  return edges;
}

/** Imports that break a floor (a folder with no floor is a violation too: give it one). */
function floorViolations(edges: Map<string, Map<string, string>>): string[] {
  const out: string[] = [];
  for (const [from, tos] of edges) {
    const floor = FLOORS[from];
    for (const [to, where] of tos) {
      if (floor === undefined) out.push(`${where} (src/${from} has no floor in boundaries.test.ts)`);
      else if (!floor.includes(to)) out.push(`${where} (src/${from} may import only ${floor.join(', ') || 'nothing of src/'})`);
    }
  }
  return out;
}

/** Every cycle between folders, each as "a -> b -> a", found by a walk from every folder. */
function folderCycles(edges: Map<string, Map<string, string>>): string[] {
  const cycles = new Set<string>();
  const walk = (start: string, at: string, pathSoFar: string[]) => {
    for (const to of edges.get(at)?.keys() ?? []) {
      if (to === start) {
        // One spelling per cycle: rotated to start at its smallest folder.
        const ring = [...pathSoFar];
        const i = ring.indexOf([...ring].sort()[0]!);
        const rotated = [...ring.slice(i), ...ring.slice(0, i)];
        cycles.add([...rotated, rotated[0]].join(' -> '));
      } else if (!pathSoFar.includes(to)) walk(start, to, [...pathSoFar, to]);
    }
  };
  for (const from of edges.keys()) walk(from, from, [from]);
  return [...cycles].sort();
}

describe('src/ folders', () => {
  const scanned = listSourceFiles(SRC).map((file) => ({ file, scan: scanFile(file) }));
  const edges = folderEdges(scanned);

  it('import only the folders below their floor', () => {
    expect(floorViolations(edges)).toEqual([]);
  });

  it('never import each other, directly or around a longer cycle', () => {
    expect(folderCycles(edges)).toEqual([]);
  });
});

describe('src/client', () => {
  it('imports only hono/client, its own files, and types from src/http', () => {
    const violations = listSourceFiles(CLIENT).flatMap((f) => clientViolations(f, scanFile(f)));
    expect(violations).toEqual([]);
  });
});

describe('the checker itself', () => {
  // Proves the rules above can fail: a known-bad file must be reported.
  const coreFile = path.join(CORE, 'bad.ts');
  const clientFile = path.join(CLIENT, 'bad.ts');

  it('flags forbidden imports and process.env / process.exit in core', () => {
    const scan = scanSource(
      `import { Hono } from 'hono';
       import type { Pool } from 'pg';
       import pino from 'pino';
       import createSubscriber from 'pg-listen';
       import { app } from '../http/app.ts';
       export { main } from '../daemon/main.ts';
       const d = await import('../daemon/env.ts');
       const port = process.env.PORT;
       const { exit } = process;
       globalThis.process['exit'](1);
       import { z } from 'zod';
       import { quoteSchema } from '../db/schema-name.ts';
       const pid = process.pid;`,
      coreFile,
    );
    expect(coreViolations(coreFile, scan)).toEqual([
      "src/core/bad.ts:1 imports 'hono'",
      "src/core/bad.ts:2 imports 'pg'",
      "src/core/bad.ts:3 imports 'pino'",
      "src/core/bad.ts:4 imports 'pg-listen'",
      "src/core/bad.ts:5 imports '../http/app.ts' (src/http and src/daemon sit above core)",
      "src/core/bad.ts:6 imports '../daemon/main.ts' (src/http and src/daemon sit above core)",
      "src/core/bad.ts:7 imports '../daemon/env.ts' (src/http and src/daemon sit above core)",
      'src/core/bad.ts:8 uses process.env',
      'src/core/bad.ts:9 uses process.exit',
      'src/core/bad.ts:10 uses process.exit',
    ]);
  });

  it('flags an import below a floor, a folder without one, and a cycle between folders', () => {
    const at = (dir: string) => path.join(SRC, dir, 'bad.ts');
    const edges = folderEdges([
      { file: at('types'), scan: scanSource(`import type { Executor } from '../driver/executor.ts';`) },
      { file: at('driver'), scan: scanSource(`import { BatonError } from '../types/errors.ts';`) },
      { file: at('db'), scan: scanSource(`import type { Engine } from '../core/engine.ts';`) },
      { file: at('core'), scan: scanSource(`import { PgExecutor } from '../db/pg/pg-executor.ts';`) },
      { file: at('newdir'), scan: scanSource(`import type { Job } from '../types/job.ts';`) },
    ]);
    expect(floorViolations(edges).sort()).toEqual([
      "src/core/bad.ts:1 imports '../db/pg/pg-executor.ts' (src/core may import only driver, types)",
      "src/db/bad.ts:1 imports '../core/engine.ts' (src/db may import only driver, types)",
      "src/newdir/bad.ts:1 imports '../types/job.ts' (src/newdir has no floor in boundaries.test.ts)",
      "src/types/bad.ts:1 imports '../driver/executor.ts' (src/types may import only nothing of src/)",
    ]);
    expect(folderCycles(edges)).toEqual(['core -> db -> core', 'driver -> types -> driver']);
  });

  it('flags runtime imports from src/http and other packages in the client', () => {
    const scan = scanSource(
      `import { hc } from 'hono/client';
       import type { AppType } from '../http/app.ts';
       import { createApp } from '../http/app.ts';
       import { type AppType as T2 } from '../http/app.ts';
       import { Hono } from 'hono';
       import { BatonError } from '../core/errors.ts';
       import { helper } from './helper.ts';`,
      clientFile,
    );
    expect(clientViolations(clientFile, scan)).toEqual([
      "src/client/bad.ts:3 imports '../http/app.ts' at runtime (use import type)",
      "src/client/bad.ts:4 imports '../http/app.ts' at runtime (use import type)",
      "src/client/bad.ts:5 imports 'hono'",
      "src/client/bad.ts:6 imports '../core/errors.ts' (outside src/client)",
    ]);
  });
});
