// Bundled in place of modules vmzones never reaches (scripts/build.ts says which and why): using one fails by name
// instead of doing something else quietly.
'use strict';

module.exports = new Proxy(
  {},
  {
    get(_target, name) {
      if (name === '__esModule' || typeof name === 'symbol') return undefined;
      throw new Error(`vmzones does not bundle this module (it was never called): ${String(name)}`);
    },
  },
);
