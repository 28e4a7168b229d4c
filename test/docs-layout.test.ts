// docs/testing.md names every test directory and every top-level source directory: a folder
// added without a line there fails here, so the map a newcomer reads does not drift from the tree.

import { readdirSync, readFileSync } from 'node:fs';
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
