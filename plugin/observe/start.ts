// Sets up the observe endpoint of a plugin process from its arguments: the metrics, the counted Kubernetes client
// the plugin should use, the RPC observer for its services, and the server. Without --observe-address nothing is
// set up and the plugin runs exactly as before.
//
// Which process serves what (docs/observe.md): both roles serve /metrics, /healthz and /status with their own RPC,
// Kubernetes and process metrics; only the step role (vmzones/step) lists Rollouts and VMClusters and exports the
// zone metrics (vmzones_zone_*), so that one scrape job per controller pod never sees a zone twice.

import type { Logger } from '../goplugin/index.ts';
import { parseWatchNamespaces } from '../kube/allowed-namespaces.ts';
import { type ClusterClients, clusterClientsFromArgs } from '../kube/cluster-registry.ts';
import { type KubeObjects, kubeObjects } from '../kube/objects.ts';
import type { RpcObserver } from '../rollouts/rpc-observer.ts';
import { isLoopbackHost, parseObserveFlags } from './flags.ts';
import { countedKube } from './kube-metrics.ts';
import { createMetrics, type ObserveMetrics, registerZoneMetrics } from './metrics.ts';
import { rpcMetrics } from './rpc-metrics.ts';
import { createObserveApp, listen } from './server.ts';
import { ZoneSnapshots } from './zone-snapshot.ts';

export interface PluginObserve {
  /** The Kubernetes client the plugin should use (counted); undefined: the plugin's own default. */
  kube: (() => KubeObjects) | undefined;
  rpc: RpcObserver | undefined;
  metrics: ObserveMetrics | undefined;
}

export interface ObserveStartOptions {
  /** The go-plugin cookie value; anything but step / metricprovider sets nothing up. */
  role: string | undefined;
  argv: readonly string[];
  logger: Logger;
  createKube?: () => KubeObjects;
}

/** Throws ObserveFlagError on a bad flag; a server that cannot bind is logged, and the plugin serves on. */
export function startObserve(options: ObserveStartOptions): PluginObserve {
  const flags = parseObserveFlags(options.argv);
  const role = options.role;
  if (flags.address === undefined || (role !== 'step' && role !== 'metricprovider')) {
    return { kube: undefined, rpc: undefined, metrics: undefined };
  }
  const { host, port } = flags.address;
  const metrics = createMetrics(role);
  const kube = countedKube(options.createKube ?? (() => kubeObjects()), metrics);
  // Zones in registered clusters are listed there with the registry the step plugin uses (docs/multicluster.md).
  let registry: ClusterClients | undefined;
  const clusters = () =>
    (registry ??= clusterClientsFromArgs(
      kube(),
      options.argv,
      (message) => options.logger.warn('a cluster Secret cannot be used', { error: message }),
      (message) => options.logger.warn('TLS verification is off', { warning: message }),
    ));
  const zones =
    role === 'step'
      ? new ZoneSnapshots(kube, {
          ttlMs: flags.cacheTtlMs,
          clusters,
          namespaces: parseWatchNamespaces(options.argv),
        })
      : undefined;
  if (zones !== undefined) registerZoneMetrics(metrics.registry, zones);
  createObserveApp({ role, metrics, zones, startedAt: new Date() })
    .then((app) => listen(app, host, port))
    .then(
      (bound) => {
        options.logger.info('observe endpoint listening', { address: `${host}:${bound.port}`, role });
        if (!isLoopbackHost(host)) {
          options.logger.warn(
            'the observe endpoint is reachable beyond the pod: let only the scraper in (manifests/observe/networkpolicy.yaml, docs/observe.md)',
            { address: `${host}:${bound.port}` },
          );
        }
      },
      (err: unknown) =>
        options.logger.error('observe endpoint not started; the plugin serves on without it', {
          address: `${host}:${port}`,
          error: err instanceof Error ? err.message : String(err),
        }),
    );
  return { kube, rpc: rpcMetrics(metrics), metrics };
}
