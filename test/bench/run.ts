// Builds and runs the side-by-side benchmark (test/bench/main.go): the TS fixture step plugin vs Argo
// Rollouts' Go step-plugin-sample (built from the Go module cache into test/bench/bin/, never committed),
// both driven through the controller's own client code. The Go program prints the figures and, as its
// last lines, run_p50_ratio_ts_over_go / startup_ratio_ts_over_go / rss_ratio_ts_over_go.
// Usage: npm run bench  (or: node test/bench/run.ts [bench flags, e.g. -calls 500])

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pluginNodeFlags } from '../../scripts/package.ts';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(benchDir, '..', '..');
const binDir = join(benchDir, 'bin');
const node = join(repoRoot, 'node_modules', 'node', 'bin', 'node');
const bundle = join(repoRoot, 'dist', 'fixture-plugin.mjs');

function run(command: string, args: readonly string[], what: string): void {
  const result = spawnSync(command, args, { cwd: benchDir, stdio: 'inherit' });
  if (result.error !== undefined || result.status !== 0) {
    console.error(`bench: ${what} failed (${result.error?.message ?? `exit ${result.status}`})`);
    process.exit(1);
  }
}

for (const [path, hint] of [
  [node, 'run `npm ci`'],
  [bundle, 'run `npm run build`'],
] as const) {
  if (!existsSync(path)) {
    console.error(`bench: ${path} is missing (${hint})`);
    process.exit(1);
  }
}
mkdirSync(binDir, { recursive: true });
run('go', ['build', '-o', join(binDir, 'bench'), '.'], 'building the benchmark');
run(
  'go',
  [
    'build',
    '-o',
    join(binDir, 'step-plugin-sample'),
    'github.com/argoproj/argo-rollouts/test/cmd/step-plugin-sample',
  ],
  'building Argo Rollouts step-plugin-sample',
);
run(
  join(binDir, 'bench'),
  [
    '-node',
    node,
    // The Node flags the ConfigMap's args give the plugin (scripts/package.ts, docs/testing.md "Plugin process").
    `-node-flags=${pluginNodeFlags.join(' ')}`,
    '-bundle',
    bundle,
    '-sample',
    join(binDir, 'step-plugin-sample'),
    ...process.argv.slice(2),
  ],
  'the benchmark',
);
