// The registration of a zone cluster `cluster-b` in pod access `proxy`, whose API server (a local stand-in) accepts
// the bearer token `zone-token`: pods read through a client carrying it are reached at the pod proxy path.

import type { ClusterRegistration } from '../../../plugin/kube/cluster-registry.ts';

export function zoneCluster(server: string): ClusterRegistration {
  return {
    name: 'cluster-b',
    secret: 'argo-rollouts/cluster-cluster-b',
    resourceVersion: '1',
    server,
    namespaces: undefined,
    podAccess: 'proxy',
    config: { bearerToken: 'zone-token', tlsClientConfig: {} } as ClusterRegistration['config'],
  };
}
