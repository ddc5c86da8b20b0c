// Runs the CLI in-process with files in memory (`-` is the stdin text), capturing stdout and stderr.

import { type CliOptions, runCli } from '../../../plugin/cli/cli.ts';
import type { CliIo } from '../../../plugin/cli/io.ts';

export interface CliResult {
  code: number;
  out: string;
  err: string;
  files: Record<string, string>;
}

export async function run(
  argv: string[],
  files: Record<string, string> = {},
  options: Omit<CliOptions, 'io'> = {},
): Promise<CliResult> {
  const result: CliResult = { code: -1, out: '', err: '', files: { ...files } };
  const io: CliIo = {
    out: (t) => {
      result.out += t;
    },
    err: (t) => {
      result.err += t;
    },
    readFile: (p) => {
      const f = result.files[p];
      if (f === undefined) throw new Error(`ENOENT: no such file or directory, open '${p}'`);
      return f;
    },
    writeFile: (p, t) => {
      if (p === '-') result.out += t;
      else result.files[p] = t;
    },
  };
  result.code = await runCli(argv, { ...options, io });
  return result;
}

export const spec =
  'vmauth: {vmuser: r}\nvmagent: {vmagent: a}\nzones: {zone-a: {vmcluster: a}, zone-b: {vmcluster: b}}\n';

/** A Rollout manifest carrying `specText` on its pod template, with `steps` (YAML lines) as its canary steps. */
export function rollout(specText: string, steps: string, name = 'vm'): string {
  return `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: ${name}  # keep me
spec:
  template:
    metadata:
      annotations:
        vmzones.io/spec: |
${specText.replace(/^(?=.)/gm, '          ')}
  strategy:
    canary:
      steps:
${steps.replace(/^(?=.)/gm, '        ')}`;
}

const action = (zone: string, a: string) =>
  `- plugin: {name: vmzones/step, config: {zone: ${zone}, action: ${a}}}\n`;
const gate = (zone: string) =>
  `- analysis: {templates: [{templateName: vmzones-zone-healthy, clusterScope: true}], args: [{name: zone, value: ${zone}}]}\n`;

/** The steps of one zone as `vmzones render` writes them (flow style). */
export function zoneSteps(zone: string, withGate = true): string {
  return (
    action(zone, 'drainReads') +
    action(zone, 'apply') +
    (withGate ? gate(zone) : '') +
    action(zone, 'restoreReads')
  );
}
export { action, gate };
