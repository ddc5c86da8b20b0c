// The placeholder objects of the scale benches (scale.ts, waves-scale.ts): zones the walk changes with no data plane
// behind them, and the VMAgent their specs name. The benches play the operator for them.

import { namespace } from '../sandbox/manifests.ts';

export const placeholderVmagent = 'placeholder-vmagent';

/** The namespace and the VMAgent every placeholder spec names (it writes nowhere: nothing renders it). */
export function placeholderNamespace(ns: string): object[] {
  return [
    namespace(ns),
    {
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMAgent',
      metadata: { name: placeholderVmagent, namespace: ns },
      spec: { remoteWrite: [{ url: 'http://placeholder.invalid/api/v1/write' }] },
    },
  ];
}

/** A zone's VMCluster of no such version: the sandbox's data plane starts no process for it (docs/testing.md). */
export function placeholderVmcluster(name: string, ns: string): object {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    metadata: { name, namespace: ns },
    spec: {
      clusterVersion: 'v0.0.0-placeholder-cluster',
      retentionPeriod: '1',
      vmstorage: { replicaCount: 1 },
      vmselect: { replicaCount: 1 },
      vminsert: { replicaCount: 1 },
    },
  };
}
