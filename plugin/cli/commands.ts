// The command table: names, flags and help texts. A command's code is loaded only when it runs, so that
// `--help`, `version` and the offline commands never evaluate what another command needs (plugin/main.ts).

import { kubeOptions, type OptionSpec, outputOption } from './args.ts';
import type { CommandModule } from './command-context.ts';

export interface Command {
  name: string;
  summary: string;
  synopsis: string;
  /** Flag lines of the help text (without -h/--help, -o, and the kubectl flags, which are added). */
  flagHelp: string;
  examples: string;
  options: Record<string, OptionSpec>;
  /** `-o yaml|json`. */
  dataOutput: boolean;
  /** Takes --kubeconfig, --context, -n and needs the runtime the plugin needs (plugin/cli/runtime.ts). */
  talksToKubernetes: boolean;
  /** Takes arguments that are not flags (`status ROLLOUT`); the others refuse them. */
  positionals?: boolean;
  load(): Promise<CommandModule>;
}

export const fileHelp =
  'FILE is a spec document, a Rollout manifest whose pod template carries the vmzones.io/spec annotation, a\n' +
  'multi-document file or `kustomize build` output; - reads stdin.';

export const commands: readonly Command[] = [
  {
    name: 'lint',
    summary: 'check spec documents, and that each Rollout carrying one walks every zone in order',
    synopsis:
      'lint --spec FILE [--spec FILE…] [--rollout NAME] [--only ZONE,…] [--template NAME] [-o yaml|json]\n' +
      '          [--cluster [-n NS] [--context C] [--kubeconfig F] [--clusters-namespace NS]]',
    flagHelp: `  --spec FILE        what to check (repeatable); ${'`-`'} reads stdin
  --rollout NAME     check only this Rollout of the files
  --only ZONE,…      the Rollouts deliberately walk only these zones (default: every zone of the spec)
  --template NAME    each zone's gate must run this analysis template; '' accepts walks without gates
                     (default: any analysis step with the arg zone=ZONE between apply and restoreReads)
  --cluster          also read each Rollout's zones in the cluster and say those drifted from the stable
                     spec, as status does (without it lint reads the files only and says nothing of drift)
  --kubeconfig PATH, --context NAME, -n NS, --clusters-namespace NS
                     with --cluster: where to read, as for status (a manifest's own namespace wins over -n)`,
    examples: `  vmzones lint --spec deploy/rollout.yaml
  kustomize build deploy/overlays/prod | vmzones lint --spec -
  vmzones lint --spec deploy/rollout.yaml --cluster --context prod -n vm`,
    options: {
      spec: { type: 'string', multiple: true },
      rollout: { type: 'string' },
      only: { type: 'string' },
      template: { type: 'string' },
      // The live check (plugin/cli/lint-live.ts); the kubectl flags only with it (lint-command.ts refuses them
      // alone), so lint stays an offline command in the table.
      cluster: { type: 'boolean' },
      ...kubeOptions,
      'clusters-namespace': { type: 'string' },
    },
    dataOutput: true,
    talksToKubernetes: false,
    load: () => import('./lint-command.ts'),
  },
  {
    name: 'render',
    summary: 'print the canary steps that walk the zones, or write them into a Rollout manifest',
    synopsis:
      'render (--spec FILE | --write FILE) [--order ZONE,… | --only ZONE,…] [--pause none|1m|manual] [--template NAME] [--rollout NAME] [-o yaml|json]',
    flagHelp: `  --spec FILE        the spec (default with --write: the annotation of the Rollout in that file)
  --write FILE       replace the walk in the Rollout's spec.strategy.canary.steps in FILE, keeping the rest of
                     FILE byte for byte (comments, formatting, the user's own steps); - filters stdin to stdout
  --rollout NAME     which Rollout, when a file holds several
  --order ZONE,…     the order to walk the zones in; must list every zone (default: the spec's order)
  --only ZONE,…      walk only these zones, in this order; says which zones are left out
  --pause P          between zones: none (the default), a Go duration, manual (an approval: pause: {})
  --template NAME    the ClusterAnalysisTemplate of each zone's gate (default vmzones-zone-healthy); '' for none`,
    examples: `  vmzones render --spec spec.yaml --pause manual
  vmzones render --write deploy/rollout.yaml
  vmzones render --write deploy/rollout.yaml --only zone-b   # a one-zone walk, e.g. a canary zone`,
    options: {
      spec: { type: 'string' },
      write: { type: 'string' },
      rollout: { type: 'string' },
      order: { type: 'string' },
      only: { type: 'string' },
      pause: { type: 'string' },
      template: { type: 'string' },
    },
    dataOutput: true,
    talksToKubernetes: false,
    load: () => import('./render-command.ts'),
  },
  {
    name: 'diff',
    summary:
      'show per zone what its VMCluster spec would become (server-side dry run), for pull-request checks',
    synopsis:
      'diff --spec FILE [--rollout NAME] [-n NS] [--clusters-namespace NS] [--kubeconfig F] [--context C]',
    flagHelp: `  --spec FILE        the spec document or Rollout manifest; - reads stdin
  --rollout NAME     which Rollout, when a file holds several
  --clusters-namespace NS  where zones' clusters are registered (default argo-rollouts; docs/multicluster.md)`,
    examples:
      '  kustomize build overlays/prod | vmzones diff --spec - -n vm\n  kubectl vmzones diff --spec rollout.yaml --context prod',
    options: {
      spec: { type: 'string' },
      rollout: { type: 'string' },
      'clusters-namespace': { type: 'string' },
    },
    dataOutput: false,
    talksToKubernetes: true,
    load: () => import('./diff.ts'),
  },
  {
    name: 'status',
    summary:
      "the Rollout's zones in walk order: state, VMCluster, routing, lease, gate, message; --watch follows the walk",
    synopsis:
      'status ROLLOUT [-n NS] [--watch] [-o json|wide] [--clusters-namespace NS] [--kubeconfig F] [--context C]',
    flagHelp: `  -w, --watch        redraw until the walk ends: exit 0 when Healthy, 1 when aborted or Degraded
  -o, --output F     wide (more columns, messages in full) or json
  --clusters-namespace NS  where zones' clusters are registered (default argo-rollouts; docs/multicluster.md)`,
    examples: '  kubectl vmzones status walk -n vm --watch\n  vmzones status walk -n vm -o json',
    options: {
      watch: { type: 'boolean', short: 'w' },
      output: { type: 'string', short: 'o' },
      'clusters-namespace': { type: 'string' },
    },
    dataOutput: false,
    talksToKubernetes: true,
    positionals: true,
    load: () => import('./status.ts'),
  },
  {
    name: 'version',
    summary: 'print the vmzones version and the Node it runs on',
    synopsis: 'version [-o yaml|json]',
    flagHelp: '',
    examples: '  vmzones version -o json',
    options: {},
    dataOutput: true,
    talksToKubernetes: false,
    load: () => import('./version-command.ts'),
  },
];

/** The flags a command's parser accepts. */
export function commandOptions(command: Command): Record<string, OptionSpec> {
  return {
    ...command.options,
    ...(command.dataOutput ? outputOption : {}),
    ...(command.talksToKubernetes ? kubeOptions : {}),
  };
}

export function commandHelp(command: Command, program: string): string {
  const flags = [
    command.flagHelp,
    command.dataOutput ? '  -o, --output F     yaml (default) or json' : '',
    command.talksToKubernetes
      ? `  --kubeconfig PATH  the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
  --context NAME     the kubeconfig context (default: its current context)
  -n, --namespace NS the namespace (default: the context's namespace)`
      : '',
    '  -h, --help         this help',
  ].filter((s) => s !== '');
  return `${command.summary}

Usage: ${program} ${command.synopsis}

Flags:
${flags.join('\n')}
${command.options.spec !== undefined || command.options.write !== undefined ? `\n${fileHelp}\n` : ''}
Examples:
${command.examples.replaceAll('vmzones ', `${program} `)}

Exit codes: 0 success, 1 problems found or the command failed, 2 usage error.
`;
}

export function globalHelp(program: string, version: string, table: readonly Command[] = commands): string {
  const width = Math.max(...table.map((c) => c.name.length));
  return `${program} ${version}: walks a change through multi-zone VictoriaMetrics one zone at a time (Argo Rollouts)

Usage: ${program} COMMAND [flags]

Commands:
${table.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}
  ${'help'.padEnd(width)}  help for a command (also: ${program} COMMAND --help)

Flags:
  -h, --help     this help
      --version  print the version

Exit codes: 0 success, 1 problems found or the command failed, 2 usage error.
Output goes to stdout, diagnostics to stderr. Commands that talk to Kubernetes take --kubeconfig, --context
and -n/--namespace, as kubectl does; lint, render and version run offline on Node 20 or newer.
${fileHelp}
${
  program === 'vmzones'
    ? `
Started by the Argo Rollouts controller (ARGO_ROLLOUTS_RPC_PLUGIN set), the same executable serves the plugins
vmzones/step and vmzones/gates. Installed as kubectl-vmzones, the commands run as \`kubectl vmzones\`.
`
    : ''
}Docs: docs/cli.md
`;
}
