// What a command's module receives and exports. In a module of its own because the command table
// (plugin/cli/commands.ts) loads each command module, and each command module names its context: neither imports
// the other for these types.

import type { Flags } from './args.ts';
import type { CliIo } from './io.ts';

export interface CommandContext {
  io: CliIo;
  /** `vmzones` or `kubectl vmzones`, for messages. */
  program: string;
}

export interface CommandModule {
  run(flags: Flags, context: CommandContext): Promise<number> | number;
}
