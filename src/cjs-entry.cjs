// The CommonJS entry (package.json "require" condition), copied beside dist/index.js and
// dist/client/index.js: Baton is ESM only, and this loads that same module, so `require` and
// `import` share one instance. Node.js 20.19+ and 22.12+ can require() an ES module; older
// ones throw ERR_REQUIRE_ESM, which becomes a message saying what to do instead.
'use strict';

try {
  module.exports = require('./index.js');
} catch (err) {
  const code = err && typeof err === 'object' ? err.code : undefined;
  if (code !== 'ERR_REQUIRE_ESM' && code !== 'ERR_REQUIRE_ASYNC_MODULE') throw err;
  throw new Error(
    `baton-queue is an ES module only, and require() cannot load ES modules in this Node.js (${process.version}). ` +
      "Use import (import { createBaton } from 'baton-queue'), or from CommonJS " +
      "const { createBaton } = await import('baton-queue'). Node.js 20.19+ and 22.12+ load ES modules with require(), " +
      'unless started with --no-experimental-require-module.',
    { cause: err },
  );
}
