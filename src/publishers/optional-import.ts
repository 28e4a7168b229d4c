// Broker client libraries are optional peer dependencies: a publisher loads its library when it
// first connects, so library users who never publish to that broker need not install it.

import { BatonError } from '../types/errors.ts';

/** Imports `name`, or throws INVALID_CONFIG saying which package to install and why. */
export async function optionalImport<T>(name: string, load: () => Promise<T>, forWhat: string): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new BatonError('INVALID_CONFIG', `${forWhat} needs the optional package ${name}: npm install ${name}`, { cause: err });
    }
    throw err;
  }
}

/** Zod issues as one line, for an INVALID_CONFIG message. */
export function issuesLine(what: string, issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): BatonError {
  const lines = issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
  return new BatonError('INVALID_CONFIG', `invalid ${what} options: ${lines.join('; ')}`, { details: lines });
}
