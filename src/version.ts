// The package's version, read once from its package.json (beside src/ and dist/ alike).

import { readFileSync } from 'node:fs';

export const PACKAGE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
