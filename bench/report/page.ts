// Regenerates the block of docs/benchmarks.md between its `generated` markers from one
// results file, so every figure on that page comes from the benchmark's output, never typed
// by hand. The rest of the page is prose and is not touched.
// Usage: npx tsx bench/report/page.ts results/bench-<date>.json

import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchReport } from '../main.ts';
import { configurationLines, machineLines, summaryTable } from './headline.ts';
import { peersRatios, runsTable, targetsTable } from './markdown.ts';

const PAGE = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url));
const START = '<!-- generated:start -->';
const END = '<!-- generated:end -->';

/** The generated block for report `r`, read from `file` (a path under results/). */
export function pageBlock(r: BenchReport, file: string): string[] {
  const base = path.basename(file, '.json');
  const minutes = Math.round((Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 60_000);
  const demote = (lines: string[]) => lines.map((l) => l.replace(/^## /, '### '));
  const ratios: string[] = [];
  peersRatios(r, ratios);
  const targets: string[] = [];
  targetsTable(r, targets);
  const summary: string[] = [];
  summaryTable(r, summary);
  const runs: string[] = [];
  runsTable(r, runs);
  return [
    `<!-- written by \`npx tsx bench/report/page.ts results/${base}.json\`; do not edit by hand -->`,
    '',
    `Latest full run: \`${r.command}\`, started ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC, ${minutes} min. ` +
      `${r.ok ? 'Every counted run verified against the database.' : '**Some runs failed verification; their figures are left out.**'} ` +
      `All tables: [results/${base}.md](../results/${base}.md); raw data: [results/${base}.json](../results/${base}.json); chart: [results/${base}.svg](../results/${base}.svg).`,
    '',
    ...machineLines(r),
    '',
    ...configurationLines(r),
    '',
    ...summary,
    ...demote(ratios),
    ...demote(targets),
    ...demote(runs),
  ];
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file) throw new Error('usage: npx tsx bench/report/page.ts results/bench-<date>.json');
  const r = JSON.parse(await readFile(file, 'utf8')) as BenchReport;
  if (r.args.quick) throw new Error(`${file} is a --quick run: the page quotes full runs only`);
  const page = await readFile(PAGE, 'utf8');
  const a = page.indexOf(START);
  const b = page.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${PAGE}: markers ${START} ... ${END} not found`);
  const block = pageBlock(r, file).join('\n');
  await writeFile(PAGE, `${page.slice(0, a + START.length)}\n${block}\n${page.slice(b)}`);
  process.stdout.write(`rewrote the generated block of ${path.relative(process.cwd(), PAGE)} from ${file}\n`);
}

// Run as a script only (the tests import pageBlock).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
