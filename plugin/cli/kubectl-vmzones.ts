// `kubectl-vmzones`: the CLI as a kubectl plugin (kubectl finds an executable of that name on PATH and passes
// it the arguments after `kubectl vmzones`). Same commands; --kubeconfig, --context and -n/--namespace reach the
// commands that talk to Kubernetes (docs/cli.md, "kubectl plugin").

import { runCli } from './cli.ts';

process.exitCode = await runCli(process.argv.slice(2), { program: 'kubectl vmzones' });
