// Builds the commits an A/B run compares: each in a git worktree of its own, with its own
// locked dependencies (npm ci), compiled to JavaScript by one compiler for every ref, so the
// figures differ only by the code at each commit. Built worktrees are kept and reused.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository this harness lives in. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** This checkout's TypeScript compiler: every ref is compiled by it, whatever its own lockfile holds. */
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

export interface BuiltRef {
  /** As given on the command line ('.' = the working tree as it is, committed or not). */
  given: string;
  sha: string;
  /** Short label for tables: the given name and the abbreviated commit. */
  label: string;
  /** Commit subject (or 'working tree' for an uncommitted snapshot). */
  subject: string;
  dir: string;
  /** The compiled library entry, imported by the bench's child processes. */
  entry: string;
}

function git(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  return execFileSync('git', args, {
    cwd: opts.cwd ?? REPO_ROOT,
    env: opts.env ?? process.env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}

/**
 * The working tree as a commit object (tracked changes and untracked files that are not
 * ignored), made with a throwaway index: neither the real index nor any branch moves.
 */
function snapshotWorkingTree(): string {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'baton-ab-index-'));
  try {
    const env = { ...process.env, GIT_INDEX_FILE: path.join(tmp, 'index') };
    git(['read-tree', 'HEAD'], { env });
    git(['add', '-A', '.'], { env });
    const tree = git(['write-tree'], { env });
    if (tree === git(['rev-parse', 'HEAD^{tree}'])) return git(['rev-parse', 'HEAD']);
    return git(['commit-tree', tree, '-p', 'HEAD', '-m', 'bench:ab snapshot of the working tree'], { env });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function resolve(given: string): { sha: string; subject: string } {
  if (given === '.') {
    const sha = snapshotWorkingTree();
    const head = git(['rev-parse', 'HEAD']);
    return {
      sha,
      subject: sha === head ? git(['log', '-1', '--format=%s', sha]) : `working tree on ${head.slice(0, 8)} (uncommitted changes)`,
    };
  }
  const sha = git(['rev-parse', '--verify', `${given}^{commit}`]);
  return { sha, subject: git(['log', '-1', '--format=%s', sha]) };
}

function run(cmd: string, args: string[], cwd: string, log: (s: string) => void): void {
  log(`  $ ${cmd} ${args.join(' ')}   (in ${cwd})`);
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** The compiler settings for a ref: its own tsconfig, emitting JavaScript next to its sources' root. */
const TSCONFIG_AB = {
  extends: './tsconfig.json',
  compilerOptions: {
    noEmit: false,
    rootDir: 'src',
    outDir: 'dist-ab',
    declaration: false,
    sourceMap: false,
    incremental: false,
    allowImportingTsExtensions: true,
    rewriteRelativeImportExtensions: true,
    // A ref that no longer type-checks against today's compiler still runs as it did.
    noEmitOnError: false,
    skipLibCheck: true,
  },
  include: ['src'],
};

/**
 * Checks out and builds one ref under `cacheDir` (reused when already built). Dependencies
 * come from the ref's own package-lock.json: linked from this checkout when the lockfiles are
 * identical, else installed with npm ci (no install scripts: the bench needs none).
 */
export function buildRef(given: string, cacheDir: string, log: (s: string) => void): BuiltRef {
  const { sha, subject } = resolve(given);
  const dir = path.join(cacheDir, sha.slice(0, 12));
  const entry = path.join(dir, 'dist-ab', 'index.js');
  const marker = path.join(dir, '.bench-ab-built');
  const label = given === '.' ? `.@${sha.slice(0, 8)}` : /^[0-9a-f]{7,40}$/.test(given) ? sha.slice(0, 8) : `${given}@${sha.slice(0, 8)}`;
  if (!existsSync(marker)) {
    log(`building ${label}: ${subject}`);
    if (existsSync(dir)) {
      try {
        git(['worktree', 'remove', '--force', dir]);
      } catch {
        rmSync(dir, { recursive: true, force: true });
      }
      git(['worktree', 'prune']);
    }
    git(['worktree', 'add', '--detach', '--force', dir, sha]);
    const lock = (root: string) => readFileSync(path.join(root, 'package-lock.json'), 'utf8');
    if (lock(dir) === lock(REPO_ROOT)) symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    else run('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], dir, log);
    writeFileSync(path.join(dir, 'tsconfig.ab.json'), `${JSON.stringify(TSCONFIG_AB, null, 2)}\n`);
    try {
      run(process.execPath, [TSC, '-p', 'tsconfig.ab.json'], dir, log);
    } catch {
      // Type errors against today's compiler: the JavaScript is still emitted (noEmitOnError off).
    }
    if (!existsSync(entry)) throw new Error(`building ${label} produced no ${entry}`);
    writeFileSync(marker, `${sha}\n`);
  }
  return { given, sha, label, subject, dir, entry };
}

/** Where built refs are kept between runs (BENCH_AB_CACHE, default a folder in the system temp dir). */
export function abCacheDir(): string {
  return process.env.BENCH_AB_CACHE ?? path.join(os.tmpdir(), 'baton-bench-ab');
}
