// Copies what the build needs beside the compiled JavaScript: the console's page and scripts,
// which the HTTP app reads from next to its own module (src/http -> dist/http), and the
// CommonJS entry beside each package export. An unchanged file is left alone, so a build
// during a test run never rewrites a file being read.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const copies = [
  ['src/http/console.html', 'dist/http/console.html'],
  ['src/cjs-entry.cjs', 'dist/index.cjs'],
  ['src/cjs-entry.cjs', 'dist/client/index.cjs'],
];
for (const [from, to] of copies) {
  mkdirSync(path.dirname(to), { recursive: true });
  if (!existsSync(to) || !readFileSync(from).equals(readFileSync(to))) copyFileSync(from, to);
}
