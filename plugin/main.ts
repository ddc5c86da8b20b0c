// The vmzones executable. The Argo Rollouts controller launches it once per configured plugin name and tells
// it its role through the go-plugin magic cookie: `step` serves vmzones/step, `metricprovider` vmzones/gates.

import { runCli } from './cli/cli.ts';
import { createGatesProvider } from './gates/provider.ts';
import { createLogger, servePlugin } from './goplugin/index.ts';
import { metricDispenseName, metricService } from './rollouts/metric-service.ts';
import { stepDispenseName, stepService } from './rollouts/step-service.ts';
import { createZoneStepPlugin } from './zones/step-plugin.ts';

const logger = createLogger('vmzones');
// InitPlugin is never retried on the same process, so a failed init must end the process to get a fresh one.
const hooks = {
  onInitFailure(error: Error) {
    logger.error('InitPlugin failed; exiting so that the controller starts a new plugin process', {
      error: error.message,
    });
    process.exit(1);
  },
};

const cookieKey = 'ARGO_ROLLOUTS_RPC_PLUGIN';
const command = process.argv[2];
if (process.env[cookieKey] === undefined && command !== undefined) {
  // Run by hand with a command: the CLI. Without one, servePlugin explains that this is a plugin and exits 1.
  process.exitCode = runCli(process.argv.slice(2));
} else {
  startPlugin();
}

function startPlugin(): void {
  servePlugin({
    cookieKey,
    logger,
    notLaunchedHint:
      'vmzones is an Argo Rollouts plugin (vmzones/step, vmzones/gates): register it in the argo-rollouts-config ConfigMap. ' +
      'By hand, run `vmzones lint --spec FILE` or `vmzones render --spec FILE`.',
    roles: {
      step: { [stepDispenseName]: stepService(createZoneStepPlugin(), hooks) },
      metricprovider: { [metricDispenseName]: metricService(createGatesProvider(), hooks) },
    },
  }).catch((error: unknown) => {
    logger.error('plugin server failed', { error: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  });
}
