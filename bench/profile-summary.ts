// Summarises V8 .cpuprofile files (BENCH_CPU_PROF=dir npm run bench ...): self time by
// function and by package/file, to find where a worker process spends its CPU.
// Usage: npx tsx bench/profile-summary.ts DIR [top]

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function area(url: string): string {
  if (!url) return '(native/gc/idle)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  const s = /\/(src|bench)\/(.+)$/.exec(url);
  if (s) return `${s[1]}/${s[2]}`;
  if (url.startsWith('node:')) return url;
  return url;
}

const dir = process.argv[2]!;
const top = Number(process.argv[3] ?? 25);
for (const f of (await readdir(dir)).filter((x) => x.endsWith('.cpuprofile'))) {
  const p = JSON.parse(await readFile(path.join(dir, f), 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const total = (p.endTime - p.startTime) / 1000;
  const byFn = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anonymous)';
    const key = `${name} ${area(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us / 1000);
    const a = ['(idle)', '(program)', '(garbage collector)'].includes(name) ? name : area(n.callFrame.url);
    byArea.set(a, (byArea.get(a) ?? 0) + us / 1000);
  }
  const busy = total - (byArea.get('(idle)') ?? 0);
  console.log(`\n== ${f}: ${total.toFixed(0)} ms wall, ${busy.toFixed(0)} ms not idle`);
  for (const [k, ms] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${ms.toFixed(0).padStart(7)} ms  ${k}`);
  console.log('  -- top functions (self time)');
  for (const [k, ms] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${ms.toFixed(1).padStart(7)} ms  ${k}`);
}
