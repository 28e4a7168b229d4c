// docs/testing.md names every test directory and every top-level source directory: a folder
// added without a line there fails here, so the map a newcomer reads does not drift from the tree.
// And every relative link of the docs, the README and the results' READMEs reaches a file that
// exists, so a result folded into git history cannot leave a page citing it.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TESTING = readFileSync(path.join(ROOT, 'docs/testing.md'), 'utf8');

/** The directories directly under `dir` (relative to the repository), as `dir/name/`. */
function subdirectories(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${dir}/${e.name}/`);
}

/** The directories among `dirs` that docs/testing.md does not name (in backquotes or the layout block). */
const unnamed = (dirs: string[], text: string) => dirs.filter((d) => !text.includes(`\`${d}\``) && !new RegExp(`^${d}\\s`, 'm').test(text));

describe('docs/testing.md', () => {
  it('names every test directory in its table of suites', () => {
    expect(unnamed(subdirectories('test'), TESTING)).toEqual([]);
  });

  it('names every source directory in its source layout', () => {
    expect(unnamed(subdirectories('src'), TESTING)).toEqual([]);
  });

  it('would report a directory it does not name', () => {
    expect(unnamed(['test/nowhere/', 'test/core/', 'src/db/'], TESTING)).toEqual(['test/nowhere/']);
  });
});

/** The pages whose links are checked: docs/, the README, results/ and its folders' READMEs. */
function pages(): string[] {
  const readmes = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? readmes(`${dir}/${e.name}`) : e.name === 'README.md' ? [`${dir}/${e.name}`] : [],
    );
  const docs = readdirSync(path.join(ROOT, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .map((n) => `docs/${n}`);
  return ['README.md', ...docs, ...readmes('results')];
}

/** `page`'s relative Markdown links (anchors dropped) that name no existing file or folder. */
function deadLinks(page: string, text: string): string[] {
  return [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
    .map((m) => m[1]!)
    .filter((l) => !/^[a-z]+:/.test(l))
    .filter((l) => !existsSync(path.join(ROOT, path.dirname(page), l)))
    .map((l) => `${page} -> ${l}`);
}

describe('links', () => {
  it('every relative link of the docs, the README and the results reaches a file', () => {
    expect(pages().flatMap((p) => deadLinks(p, readFileSync(path.join(ROOT, p), 'utf8')))).toEqual([]);
  });

  it('would report a link to a file that is gone', () => {
    expect(deadLinks('docs/x.md', '[a](../results/gone.md) [b](operations.md#x) [c](https://example.com)')).toEqual([
      'docs/x.md -> ../results/gone.md',
    ]);
  });
});
