// Loads user handlers from the module named by BATON_HANDLERS: its `handlers`
// export (or default export) maps job type -> handler function. A module that
// does not fit is a ConfigError at start-up, not a surprise at the first job.
// A TypeScript module is loaded through tsx when it is installed (the daemon itself is
// compiled JavaScript and does not need it).

import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { NAME_PATTERN } from '../core/config.ts';
import type { Handler, HandlerMap } from '../core/handler.ts';
import { ConfigError } from './env.ts';

export async function loadHandlers(modulePath: string): Promise<HandlerMap> {
  const where = `BATON_HANDLERS (--handlers) ${modulePath}`;
  if (!existsSync(modulePath)) throw new ConfigError(`${where}: file not found`, 'BATON_HANDLERS');
  let mod: Record<string, unknown>;
  try {
    if (/\.[cm]?tsx?$/.test(modulePath)) await registerTypeScript(where);
    mod = (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${where}: could not load: ${(err as Error).message}`, 'BATON_HANDLERS');
  }
  const map = (mod.handlers ?? mod.default) as unknown;
  if (map === null || typeof map !== 'object') {
    throw new ConfigError(`${where}: must export \`handlers\` (or a default export): an object of jobType -> function`, 'BATON_HANDLERS');
  }
  const out: Record<string, Handler> = {};
  for (const [jobType, fn] of Object.entries(map)) {
    if (!NAME_PATTERN.test(jobType))
      throw new ConfigError(`${where}: job type ${JSON.stringify(jobType)} is not a valid name`, 'BATON_HANDLERS');
    if (typeof fn !== 'function')
      throw new ConfigError(`${where}: handler for ${JSON.stringify(jobType)} is not a function`, 'BATON_HANDLERS');
    out[jobType] = fn as Handler;
  }
  if (Object.keys(out).length === 0) throw new ConfigError(`${where}: exports no handlers`, 'BATON_HANDLERS');
  return Object.freeze(out);
}

let typeScriptRegistered = false;

/** Registers tsx's ESM loader in this process, once; a clear ConfigError when tsx is not installed. */
async function registerTypeScript(where: string): Promise<void> {
  if (typeScriptRegistered) return;
  let api: { register(): unknown };
  try {
    api = (await import('tsx/esm/api')) as { register(): unknown };
  } catch {
    throw new ConfigError(
      `${where}: a TypeScript module needs tsx (npm install tsx), or point at its compiled JavaScript`,
      'BATON_HANDLERS',
    );
  }
  api.register();
  typeScriptRegistered = true;
}
