// Flag parsing for every command (node:util parseArgs, strict): the flags a command declares, `-h/--help`,
// `-o yaml|json` where the output is data, and the kubectl flags for commands that talk to Kubernetes.

import { type ParseArgsConfig, parseArgs } from 'node:util';
import { CodedError } from '../goplugin/failure-codes.ts';

/** A command line the CLI cannot run: exit 2, with the command's usage. */
export class UsageError extends CodedError {
  constructor(message: string) {
    super('UsageInvalid', message);
  }
  override readonly name = 'UsageError';
}

export type OptionSpec = NonNullable<ParseArgsConfig['options']>[string];

export const outputFormats = ['yaml', 'json'] as const;
export type OutputFormat = (typeof outputFormats)[number];

export const outputOption: Record<string, OptionSpec> = { output: { type: 'string', short: 'o' } };

/** kubectl's own flag names, so `kubectl vmzones status -n prod` reads as any kubectl command does. */
export const kubeOptions: Record<string, OptionSpec> = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
};

/** Where a command that talks to Kubernetes connects; unset fields fall back to KUBECONFIG and its current context. */
export interface KubeTarget {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
}

type Value = string | boolean | (string | boolean)[] | undefined;

/** Typed access to parsed flags. */
export class Flags {
  readonly #values: Record<string, Value>;
  readonly positionals: readonly string[];
  constructor(values: Record<string, Value>, positionals: readonly string[]) {
    this.#values = values;
    this.positionals = positionals;
  }
  string(name: string): string | undefined {
    const v = this.#values[name];
    return typeof v === 'string' ? v : undefined;
  }
  strings(name: string): string[] {
    const v = this.#values[name];
    if (v === undefined) return [];
    return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
  }
  bool(name: string): boolean {
    return this.#values[name] === true;
  }
  has(name: string): boolean {
    return this.#values[name] !== undefined;
  }
  /** `-o`: yaml unless the user asks for json. */
  output(): OutputFormat {
    const o = this.string('output') ?? 'yaml';
    if (!(outputFormats as readonly string[]).includes(o))
      throw new UsageError(`-o must be one of ${outputFormats.join(', ')} (got ${JSON.stringify(o)})`);
    return o as OutputFormat;
  }
  kubeTarget(): KubeTarget {
    const target: KubeTarget = {};
    for (const key of ['kubeconfig', 'context', 'namespace'] as const) {
      const v = this.string(key);
      if (v !== undefined) target[key] = v;
    }
    return target;
  }
  /** A comma-separated list flag (`--only zone-a,zone-b`); undefined when not given. */
  list(name: string): string[] | undefined {
    const v = this.string(name);
    if (v === undefined) return undefined;
    const items = v.split(',').map((z) => z.trim());
    if (items.some((z) => z === ''))
      throw new UsageError(`--${name} takes a comma-separated list of names (got ${JSON.stringify(v)})`);
    return items;
  }
}

/** True when the arguments ask for help (before a `--` that ends the flags). */
export function wantsHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}

export function parseFlags(
  args: readonly string[],
  options: Record<string, OptionSpec>,
  allowPositionals: boolean,
): Flags {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals,
    });
    return new Flags(values as Record<string, Value>, positionals);
  } catch (err) {
    // parseArgs' messages name the flag ("Unknown option '--bogus'"); its hint about `--` is noise here.
    throw new UsageError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
}
