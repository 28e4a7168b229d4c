// Handler module the benchmark loads into `baton serve` (BATON_HANDLERS): records each
// start on the host monotonic clock and writes them to BENCH_STARTS_FILE when the daemon exits.

import { writeFileSync } from 'node:fs';
import type { HandlerMap } from '../../src/index.ts';
import { nowMs } from '../stats.ts';

const starts: Array<[number, number]> = [];
const file = process.env.BENCH_STARTS_FILE;

process.on('exit', () => {
  if (file) writeFileSync(file, JSON.stringify(starts));
});

export const handlers: HandlerMap = {
  noop: (ctx) => {
    starts.push([(ctx.payload as { seq: number }).seq, nowMs()]);
  },
};
