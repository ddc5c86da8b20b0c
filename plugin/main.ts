// The vmzones executable. The Argo Rollouts controller launches it once per configured plugin name and tells
// it its role through the go-plugin magic cookie: `step` serves vmzones/step, `metricprovider` vmzones/gates.
// Run by hand (no cookie) it is the CLI. Both paths load their modules with import() so that the CLI's offline
// commands never evaluate the Kubernetes client, which needs a newer Node than users' CI may have
// (docs/cli.md, "Node versions").

import { runtimeProblem } from './cli/runtime.ts';
import type { KubeObjects } from './kube/objects.ts';
import type { RpcObserver } from './rollouts/rpc-observer.ts';

const cookieKey = 'ARGO_ROLLOUTS_RPC_PLUGIN';
if (process.env[cookieKey] === undefined) {
  const { runCli } = await import('./cli/cli.ts');
  process.exitCode = await runCli(process.argv.slice(2), { program: 'vmzones' });
} else {
  const problem = runtimeProblem('the vmzones plugin', 'plugin');
  if (problem !== undefined) {
    process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
  await startPlugin();
}

async function startPlugin(): Promise<void> {
  const role = process.env[cookieKey];
  // Only the served role's modules and, without an --observe-* flag, no observe endpoint (prom-client) are
  // evaluated: each evaluated module costs the plugin process heap and code space (docs/testing.md, "Plugin process").
  const wantsObserve = process.argv.slice(2).some((arg) => arg.startsWith('--observe-'));
  const [{ createLogger, servePlugin }, { unreadFields }, stepRole, metricRole, observing] =
    await Promise.all([
      import('./goplugin/index.ts'),
      import('./rollouts/views.ts'),
      role === 'step'
        ? Promise.all([
            import('./rollouts/step-service.ts'),
            import('./zones/step-plugin.ts'),
            import('./gates/zone-queue-check.ts'),
            import('./kube/watched-objects.ts'),
            import('./kube/objects.ts'),
            import('./zones/reconciler/reconciler.ts'),
          ])
        : undefined,
      role === 'metricprovider'
        ? Promise.all([import('./rollouts/metric-service.ts'), import('./gates/provider.ts')])
        : undefined,
      wantsObserve ? import('./observe/index.ts') : undefined,
    ]);
  const logger = createLogger('vmzones');
  // InitPlugin is never retried on the same process, so a failed init must end the process to get a fresh one.
  // The services call this only after the error reply was written to the socket, so the controller reads the
  // plugin's error rather than a dropped connection.
  const hooks = {
    onInitFailure(error: Error) {
      logger.error('InitPlugin failed; exiting so that the controller starts a new plugin process', {
        error: error.message,
      });
      process.exit(1);
    },
  };
  // The observe endpoint (docs/observe.md), only with --observe-address in the plugin's args.
  let observe: { kube: (() => KubeObjects) | undefined; rpc: RpcObserver | undefined } = {
    kube: undefined,
    rpc: undefined,
  };
  if (observing !== undefined) {
    try {
      observe = observing.startObserve({ role, argv: process.argv.slice(2), logger });
    } catch (error) {
      if (!(error instanceof observing.ObserveFlagError)) throw error;
      logger.error('bad observe flag in the plugin args (argo-rollouts-config)', { error: error.message });
      process.exit(1);
    }
  }
  const kube = observe.kube;
  const stepPlugins = ([
    step,
    { createZoneStepPlugin, inCallWatchedKinds },
    { checkZoneQueue },
    { watchedObjects },
    { loadKubeConfig },
    { reconcilerWatchedKinds },
  ]: NonNullable<typeof stepRole>) => ({
    [step.stepDispenseName]: step.stepService(
      createZoneStepPlugin({
        ...(kube ? { kube: kube() } : {}),
        queueCheck: checkZoneQueue,
        // Before a drain, the zones that keep serving are current (zones/moves/serving-zones.ts).
        servingZones: true,
        // The reconciler's per-pass reads from watches, and the steps' in-call waits woken by them (docs/scale.md).
        watch: (live, namespaces) =>
          watchedObjects(live, {
            kubeConfig: loadKubeConfig(),
            kinds: reconcilerWatchedKinds,
            changeKinds: inCallWatchedKinds,
            namespaces,
            onProblem: (message) => logger.warn(message),
          }),
      }),
      hooks,
      observe.rpc,
    ),
  });
  const metricPlugins = ([metric, { createGatesProvider }]: NonNullable<typeof metricRole>) => ({
    [metric.metricDispenseName]: metric.metricService(
      createGatesProvider({ ...(kube ? { kube } : {}), logger }),
      hooks,
      observe.rpc,
    ),
  });
  servePlugin({
    cookieKey,
    logger,
    ignoredFields: unreadFields,
    notLaunchedHint:
      'vmzones is an Argo Rollouts plugin (vmzones/step, vmzones/gates): register it in the argo-rollouts-config ConfigMap. ' +
      'By hand, run it without the cookie: `vmzones --help`.',
    // The cookie picks one role; servePlugin refuses any other value, naming both.
    roles: {
      step: stepRole ? stepPlugins(stepRole) : {},
      metricprovider: metricRole ? metricPlugins(metricRole) : {},
    },
  }).catch((error: unknown) => {
    logger.error('plugin server failed', { error: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  });
}
