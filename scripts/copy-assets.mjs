// Copies what the build needs beside the compiled JavaScript: the console's page, stylesheet
// and scripts, which the HTTP app reads from next to its own module (src/http/console ->
// dist/http/console), and the CommonJS entry beside each package export. An unchanged file is
// left alone, so a build during a test run never rewrites a file being read. Then removes
// what an earlier build left for a source that is gone (a module moved or deleted), so a
// package packed from a tree built before the move does not ship it.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

const CONSOLE = 'src/http/console';
const copies = [
  ...readdirSync(CONSOLE).map((name) => [path.join(CONSOLE, name), path.join('dist/http/console', name)]),
  ['src/cjs-entry.cjs', 'dist/index.cjs'],
  ['src/cjs-entry.cjs', 'dist/client/index.cjs'],
];
for (const [from, to] of copies) {
  mkdirSync(path.dirname(to), { recursive: true });
  if (!existsSync(to) || !readFileSync(from).equals(readFileSync(to))) copyFileSync(from, to);
}
// The one-file console of earlier builds: gone, so a package packed from this tree does not ship it.
rmSync('dist/http/console.html', { force: true });

// Compiled output of a source that is gone: dist/a/b.js (.d.ts) without src/a/b.ts, and console
// files without theirs. The copies above are sources of their own.
const copied = new Set(copies.map(([, to]) => to));
const compiled = /\.(d\.ts|js)$/;
for (const entry of readdirSync('dist', { recursive: true, withFileTypes: true })) {
  if (!entry.isFile()) continue;
  const file = path.join(entry.parentPath, entry.name);
  if (copied.has(file)) continue;
  const rel = path.relative('dist', file);
  const source = rel.startsWith(`http${path.sep}console${path.sep}`)
    ? path.join('src', rel)
    : compiled.test(rel)
      ? path.join('src', rel.replace(compiled, '.ts'))
      : null;
  if (source && !existsSync(source)) rmSync(file);
}
