// `vmzones version`: the package version (injected at build time) and the Node running it.

import { stringify } from 'yaml';
import type { Flags } from './args.ts';
import { buildInfo } from './build-info.ts';
import type { CommandContext } from './command-context.ts';

export function run(flags: Flags, { io }: CommandContext): number {
  const data = {
    version: buildInfo.version,
    node: process.version,
    nodeForPluginAndKubernetes: buildInfo.nodeEngine,
  };
  if (!flags.has('output')) io.out(`vmzones ${data.version} (Node ${data.node})\n`);
  else io.out(flags.output() === 'json' ? `${JSON.stringify(data, null, 2)}\n` : stringify(data));
  return 0;
}
