// `vmzones COMMAND …` (and `kubectl vmzones COMMAND …`): help, version, flag parsing and exit codes for every
// command; the command table is plugin/cli/commands.ts, the user's guide docs/cli.md.
// Exit codes: 0 success, 1 problems found or the command failed, 2 usage error. Never a stack trace.

import { parseFlags, UsageError, wantsHelp } from './args.ts';
import { buildInfo } from './build-info.ts';
import { type Command, commandHelp, commandOptions, commands, globalHelp } from './commands.ts';
import { type CliIo, InputError, processIo } from './io.ts';
import { runtimeProblem } from './runtime.ts';

export const exitCodes = { ok: 0, problems: 1, usage: 2 } as const;

export interface CliOptions {
  /** How the user called it: `vmzones` or `kubectl vmzones`. */
  program?: string;
  io?: CliIo;
  /** For tests: another command table, another Node version. */
  commands?: readonly Command[];
  nodeVersion?: string;
}

/** Runs a command line; resolves to the process exit code. */
export async function runCli(argv: readonly string[], options: CliOptions = {}): Promise<number> {
  const io = options.io ?? processIo;
  const program = options.program ?? 'vmzones';
  const table = options.commands ?? commands;
  const [first, ...rest] = argv;
  const usageHint = `Run '${program} --help' for the commands.\n`;

  if (first === undefined) {
    io.err(globalHelp(program, buildInfo.version, table));
    return exitCodes.usage;
  }
  if (first === '--help' || first === '-h') {
    io.out(globalHelp(program, buildInfo.version, table));
    return exitCodes.ok;
  }
  if (first === '--version') {
    io.out(`vmzones ${buildInfo.version}\n`);
    return exitCodes.ok;
  }
  if (first === 'help') {
    const named = rest[0];
    const command = table.find((c) => c.name === named);
    if (named === undefined) io.out(globalHelp(program, buildInfo.version, table));
    else if (command === undefined) {
      io.err(`${program}: no command ${JSON.stringify(named)}\n${usageHint}`);
      return exitCodes.usage;
    } else io.out(commandHelp(command, program));
    return exitCodes.ok;
  }
  const command = table.find((c) => c.name === first);
  if (command === undefined) {
    io.err(
      `${program}: ${first.startsWith('-') ? 'a command comes first, then flags' : `unknown command ${JSON.stringify(first)}`}\n${usageHint}`,
    );
    return exitCodes.usage;
  }
  if (wantsHelp(rest)) {
    io.out(commandHelp(command, program));
    return exitCodes.ok;
  }

  const label = `${program} ${command.name}`;
  try {
    const flags = parseFlags(rest, commandOptions(command), command.positionals === true);
    if (command.dataOutput) flags.output(); // a bad -o is a usage error before any work
    if (command.talksToKubernetes) {
      const problem = runtimeProblem(label, 'cli', options.nodeVersion);
      if (problem !== undefined) {
        io.err(`${problem}\n`);
        return exitCodes.problems;
      }
    }
    const module = await command.load();
    return await module.run(flags, { io, program });
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(
        `${label}: ${err.message}\nUsage: ${program} ${command.synopsis}\nRun '${label} --help' for more.\n`,
      );
      return exitCodes.usage;
    }
    // InputError and anything unforeseen: one line (or a problem list) naming what and where.
    const message = err instanceof Error ? err.message : String(err);
    io.err(`${label}: ${err instanceof InputError ? '' : 'failed: '}${message}\n`);
    return exitCodes.problems;
  }
}
