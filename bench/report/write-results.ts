// Where a bench's run lands: `<dir>/<prefix>-<UTC date and minute>.json` (everything) and `.md`
// (its report, made from that JSON alone).

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Writes the run's JSON and report; answers their common path, without the extension. */
export async function writeResults(dir: string, prefix: string, out: unknown, markdown: string, at = new Date()): Promise<string> {
  await mkdir(dir, { recursive: true });
  const base = path.join(dir, `${prefix}-${at.toISOString().slice(0, 16).replace(/[:T]/g, '-')}`);
  await writeFile(`${base}.json`, `${JSON.stringify(out, null, 2)}\n`);
  await writeFile(`${base}.md`, markdown);
  return base;
}
