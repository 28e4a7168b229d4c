// placeholder
import type { Ctx } from './scenarios/context.ts';
import type { Variant } from './systems/types.ts';
export async function startDaemon(_ctx: Ctx): Promise<{ forVariant(v: Variant): Promise<{ base: string; stop(): Promise<void> }> }> { throw new Error('daemon not available yet'); }
