// Copies what the build needs beside the compiled JavaScript: the console page, which
// the HTTP app reads from next to its own module (src/http -> dist/http). An unchanged
// file is left alone, so a build during a test run never rewrites a file being read.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';

const [from, to] = ['src/http/console.html', 'dist/http/console.html'];
mkdirSync('dist/http', { recursive: true });
if (!existsSync(to) || !readFileSync(from).equals(readFileSync(to))) copyFileSync(from, to);
