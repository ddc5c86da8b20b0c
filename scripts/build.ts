// Bundles the plugin, the kubectl plugin and the conformance test fixture into single ESM files:
// the controller launches `<node> dist/vmzones.mjs`; users run `vmzones` / `kubectl vmzones` (package.json bin).
// No code splitting: each bundle stays one file to copy, and esbuild keeps a module reached only through
// import() uninitialized until that import() runs, which is what lets the CLI's offline commands run on Node 20
// although the Kubernetes client and undici in the same file do not (plugin/main.ts, docs/cli.md).

import { chmodSync, readFileSync } from 'node:fs';
import { build } from 'esbuild';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  version: string;
  engines: { node: string };
};

// name → [entry, oldest Node it must load on]
const entries: Record<string, [string, string]> = {
  vmzones: ['plugin/main.ts', 'node20'],
  'kubectl-vmzones': ['plugin/cli/kubectl-vmzones.ts', 'node20'],
  'fixture-plugin': ['test/fixtures/fixture-plugin.ts', 'node24'],
};

for (const [name, [entry, target]] of Object.entries(entries)) {
  const outfile = `dist/${name}.mjs`;
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target,
    format: 'esm',
    sourcemap: 'linked',
    legalComments: 'none',
    // Whitespace and syntax only (names are kept for stack traces; the linked source map maps positions back):
    // V8 keeps a bundle's whole source in the heap of every plugin process, so this is ~4 MiB of RSS per process
    // for vmzones.mjs (docs/testing.md, "Plugin process").
    minifyWhitespace: true,
    minifySyntax: true,
    define: {
      VMZONES_VERSION: JSON.stringify(pkg.version),
      VMZONES_NODE_ENGINE: JSON.stringify(pkg.engines.node),
    },
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
