// placeholder
import type { Ctx } from './scenarios/context.ts';
export interface MicroResult { name: string; opsPerSec: number; rowsPerSec: number; meanMs: number; p99Ms: number; samples: number; batch: number }
export async function microBenchmarks(_ctx: Ctx): Promise<MicroResult[]> { throw new Error('engine executor not available yet'); }
