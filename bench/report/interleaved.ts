// `npx tsx bench/report/interleaved.ts <dir>`: the table of an interleaved old/new comparison of
// bench/workflows.ts and bench/outbox.ts runs, from files named `wf-<side>-<round>-*.json` and
// `ob-<side>-<round>-*.json` (side old or new): each figure's per-file median round by round,
// the median of the rounds on each side, and new over old. Printed as markdown.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) throw new Error('usage: interleaved.ts <dir>');

interface Figure {
  label: string;
  file: 'wf' | 'ob';
  read: (report: any) => number;
  /** Shown with this many decimals. */
  digits: number;
}

const FIGURES: Figure[] = [
  { label: 'workflow runs/s (5 steps)', file: 'wf', read: (r) => r.throughput.runsPerSec.median, digits: 0 },
  { label: 'event sent → run resumed, p50 ms', file: 'wf', read: (r) => r.latencyMs.eventToResume.p50, digits: 1 },
  { label: 'relay to webhook, batch 100, messages/s', file: 'ob', read: (r) => r.throughput['hooks/100'].median, digits: 0 },
  { label: 'relay to NATS, batch 100, messages/s', file: 'ob', read: (r) => r.throughput['js/100'].median, digits: 0 },
  { label: 'relay to webhook, batch 500, messages/s', file: 'ob', read: (r) => r.throughput['hooks/500'].median, digits: 0 },
  { label: 'relay to NATS, batch 500, messages/s', file: 'ob', read: (r) => r.throughput['js/500'].median, digits: 0 },
  { label: '1,000 messages of one key to NATS, s', file: 'ob', read: (r) => r.key.js.seconds.median, digits: 2 },
  { label: '1,000 messages of one key to the webhook, s', file: 'ob', read: (r) => r.key.hooks.seconds.median, digits: 2 },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The reports of one bench and side, in round order. */
function reports(file: 'wf' | 'ob', side: 'old' | 'new'): unknown[] {
  const pattern = new RegExp(`^${file}-${side}-(\\d+)-.*\\.json$`);
  return readdirSync(dir!)
    .flatMap((f) => {
      const m = pattern.exec(f);
      return m ? [{ round: Number(m[1]), f }] : [];
    })
    .sort((a, b) => a.round - b.round)
    .map(({ f }) => JSON.parse(readFileSync(path.join(dir!, f), 'utf8')));
}

const lines = ['| figure | old, round by round | new, round by round | median old / new | new / old |', '|---|---|---|---:|---:|'];
for (const f of FIGURES) {
  const [old, neu] = (['old', 'new'] as const).map((side) => reports(f.file, side).map(f.read));
  const show = (x: number) => x.toFixed(f.digits);
  const ratio = median(neu!) / median(old!);
  lines.push(
    `| ${f.label} | ${old!.map(show).join(', ')} | ${neu!.map(show).join(', ')} | ${show(median(old!))} / ${show(median(neu!))} | ${ratio.toFixed(2)}x |`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
