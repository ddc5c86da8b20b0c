// Bundles the plugin (and the conformance test fixture) into single ESM files that Node 24 runs directly:
// the controller launches `<node> dist/vmzones.mjs`.

import { chmodSync } from 'node:fs';
import { build } from 'esbuild';

const entries: Record<string, string> = {
  vmzones: 'plugin/main.ts',
  'fixture-plugin': 'test/fixtures/fixture-plugin.ts',
};

for (const [name, entry] of Object.entries(entries)) {
  const outfile = `dist/${name}.mjs`;
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'esm',
    sourcemap: 'linked',
    legalComments: 'none',
    banner: {
      // A shebang for running by hand; bundled CommonJS dependencies may still call require().
      js: "#!/usr/bin/env node\nimport { createRequire as __vmzonesCreateRequire } from 'node:module'; const require = __vmzonesCreateRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  chmodSync(outfile, 0o755);
}
console.log(
  `built ${Object.keys(entries)
    .map((n) => `dist/${n}.mjs`)
    .join(', ')}`,
);
