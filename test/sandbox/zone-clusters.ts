// Zone clusters: Kubernetes clusters of their own next to the sandbox's hub, each holding one zone or more. Each runs
// etcd + kube-apiserver (its own CA, RBAC on), kube-controller-manager, kube-scheduler, the simulated kubelet, the
// real VM operator and the data plane, and is registered in the hub as an Argo CD cluster Secret with the token
// of the ServiceAccount that manifests/multicluster/zone-cluster-rbac.yaml binds (docs/multicluster.md).
//
// The hub reaches a zone cluster's vminsert and vmselect as in production, through addresses outside either
// cluster: the zone cluster's data plane publishes the two Services of each of its zones on a loopback address of the
// zone's own (127.0.0.2, 127.0.0.3, ... for the first zone of each cluster, 127.0.1.2 for cluster 1's second: as a
// LoadBalancer gives each its own IP), and the hub's VMAgent remote-write URL and VMUser static URL name them.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BuiltBinaries } from '../env/build.ts';
import { versions } from '../env/versions.ts';
import { clusterSecret } from '../unit/zones/memory-cluster.ts';
import { Kubectl } from './kubectl.ts';
import { namespace, vmCluster, vmNamespace, type Zone } from './manifests.ts';
import type { PodNetwork } from './pod-network.ts';
import { freePort } from './ports.ts';
import type { DaemonRecord, DaemonSpec } from './processes.ts';
import {
  crdsEstablished,
  kubeconfigYaml,
  nodeDaemonsReady,
  repoRoot,
  resourcesOperational,
  startControlPlane,
  startNodeDaemons,
  startOperatorAndDataPlane,
  vmCrdsFile,
} from './sandbox.ts';

/** One zone of a zone cluster: a cluster holding several zones has one of these per zone, sharing all but the zone
 *  and its two published URLs. */
export interface ZoneClusterState {
  /** The registered name (`zones.<zone>.cluster`), e.g. "cluster-b". */
  name: string;
  zone: string;
  apiServer: string;
  /** The admin's kubeconfig of this cluster (the test's view; the plugin uses the registered token). */
  kubeconfig: string;
  endpointsFile: string;
  /** The loopback address this cluster publishes the zone's Services on (each zone of a cluster has its own). */
  address: string;
  /** The hub's VMAgent writes the zone here (a `spec.remoteWrite[].url`). */
  vminsertWriteUrl: string;
  /** The hub's VMUser reads the zone here (a static `targetRefs` URL). */
  vmselectUrl: string;
  /** The address this cluster's Pods report, when not 127.0.0.1: inside the sandbox's pod network namespace. */
  podIP?: string;
}

export interface ZoneClusterOptions {
  daemon: (spec: DaemonSpec) => DaemonRecord;
  binaries: BuiltBinaries;
  /** The sandbox's state dir: this cluster's state goes under `<name>/` in it. */
  stateDir: string;
  logDir: string;
  name: string;
  /** The zones it holds (each a VMCluster in its vm namespace). */
  zones: Zone[];
  /** The n-th zone cluster (1, 2, ...): its loopback addresses are 127.0.k.(n+1), k-th zone from 0. */
  index: number;
  /** The hub's admin kubectl: the cluster Secret is created there. */
  hub: Kubectl;
  /** Namespace of the cluster Secrets (the plugins' --cluster-secrets-namespace). */
  secretsNamespace: string;
  readyTimeoutSeconds: number;
  podRestartSeconds: number;
  /** The sandbox's pod network (test/sandbox/pod-network.ts); default: Pods at 127.0.0.1. */
  podNetwork?: Pick<PodNetwork, 'podAddress' | 'netns'>;
}

export async function startZoneCluster(options: ZoneClusterOptions): Promise<ZoneClusterState[]> {
  const { daemon, binaries, logDir, name, zones } = options;
  const stateDir = join(options.stateDir, name);
  const pkiDir = join(stateDir, 'pki');
  mkdirSync(stateDir, { recursive: true });
  execFileSync(binaries.sandboxctl, ['pki', '--dir', pkiDir]);
  const apiServer = await startControlPlane({ daemon, binaries, stateDir, pkiDir, logDir, name });
  const kubeconfig = join(stateDir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(apiServer, pkiDir), { mode: 0o600 });
  const kubectl = new Kubectl(binaries.kubectl, kubeconfig);
  const cluster = {
    daemon,
    binaries,
    stateDir,
    logDir,
    kubeconfig,
    name,
    ...(options.podNetwork === undefined ? {} : { podNetwork: options.podNetwork }),
  };
  const node = await startNodeDaemons({ ...cluster, pkiDir });
  await kubectl.applyFiles([vmCrdsFile(stateDir, 'real')]);
  await kubectl.apply([namespace(vmNamespace)]);
  await crdsEstablished(kubectl);
  await nodeDaemonsReady(node, kubectl);

  // Each zone on an address of its own (as each LoadBalancer Service gets its IP): the spec's vminsertHosts and
  // vmselectHosts name a zone by host alone. The cluster's first zone keeps 127.0.0.(n+1), its k-th 127.0.k.(n+1).
  const published = await Promise.all(
    zones.map(async (zone, k) => ({
      zone,
      address: `127.0.${k}.${options.index + 1}`,
      insertPort: await freePort(),
      selectPort: await freePort(),
    })),
  );
  const endpointsFile = join(stateDir, 'endpoints.json');
  const operator = await startOperatorAndDataPlane({
    ...cluster,
    operator: 'real',
    endpointsFile,
    readyTimeoutSeconds: options.readyTimeoutSeconds,
    podRestartSeconds: options.podRestartSeconds,
    publish: published.flatMap(({ zone, address, insertPort, selectPort }) => [
      { address: `${address}:${insertPort}`, service: `vminsert-${zone.vmcluster}.${vmNamespace}.svc:8480` },
      { address: `${address}:${selectPort}`, service: `vmselect-${zone.vmcluster}.${vmNamespace}.svc:8481` },
    ]),
  });
  const ports = await Promise.all(zones.map(() => freePort()));
  await kubectl.apply(
    zones.map((zone, i) => vmCluster(zone, `${versions.victoriaMetrics}-cluster`, ports[i] ?? 0)),
  );
  await resourcesOperational(
    kubectl,
    zones.map((zone) => `vmcluster/${zone.vmcluster}`),
    operator,
  );

  // The least RBAC a zone cluster grants vmzones, and the cluster Secret the admin writes in the hub.
  await kubectl.applyFiles([join(repoRoot, 'manifests', 'multicluster', 'zone-cluster-rbac.yaml')]);
  const token = (await kubectl.run(['create', 'token', 'vmzones', '-n', 'vmzones', '--duration=24h'])).trim();
  const caData = readFileSync(join(pkiDir, 'ca.crt')).toString('base64');
  const registration = clusterSecret(name, apiServer, { bearerToken: token, tlsClientConfig: { caData } });
  await options.hub.apply([
    { ...registration, metadata: { ...registration.metadata, namespace: options.secretsNamespace } },
  ]);
  return published.map(({ zone, address, insertPort, selectPort }) => ({
    name,
    zone: zone.zone,
    apiServer,
    kubeconfig,
    endpointsFile,
    address,
    vminsertWriteUrl: `http://${address}:${insertPort}/insert/0/prometheus/api/v1/write`,
    vmselectUrl: `http://${address}:${selectPort}/`,
    ...(options.podNetwork === undefined ? {} : { podIP: options.podNetwork.podAddress }),
  }));
}
