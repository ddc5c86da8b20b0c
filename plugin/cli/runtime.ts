// Which Node a part of vmzones needs. The offline commands (lint, render, version) run on every Node LTS line
// still in use (20, 22, 24); the plugin server and the commands that talk to Kubernetes load the Kubernetes
// client and undici, which need the Node range package.json declares (undici 8 reads zlib's zstd API at import
// time, which Node 20 lacks: docs/cli.md). Those check first and say so in one line instead of a stack trace.

import { buildInfo } from './build-info.ts';

/** The lowest version of a range such as ">=24.11.0 <25". */
export function minimumNode(range: string): [number, number, number] {
  const m = /(?:^|\s)>=?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(range);
  if (m === null) throw new Error(`cannot read a lowest Node version from ${JSON.stringify(range)}`);
  return [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
}

function atLeast(found: string, needed: readonly [number, number, number]): boolean {
  const parts = found.replace(/^v/, '').split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const a = parts[i] ?? 0;
    const b = needed[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

export type RuntimeUse = 'cli' | 'plugin';

/**
 * One line naming the Node found, the Node needed and how to get it; undefined when this Node is new enough.
 * The CLI's hint is a command to paste (npm's `node` package is a self-contained Node binary); the plugin's
 * points at the controller configuration.
 */
export function runtimeProblem(
  what: string,
  use: RuntimeUse,
  found: string = process.versions.node,
): string | undefined {
  const needed = minimumNode(buildInfo.nodeEngine);
  if (atLeast(found, needed)) return undefined;
  const major = needed[0];
  const how =
    use === 'cli'
      ? `install Node ${major}, or run it on the self-contained Node ${major} from npm: npx -y node@${major} ${process.argv.slice(1).join(' ')}`
      : `point location in argo-rollouts-config at a Node ${major} runtime (README.md, "Running it in the controller")`;
  return `vmzones: ${what} needs Node ${buildInfo.nodeEngine}, found v${found.replace(/^v/, '')}: ${how}`;
}
