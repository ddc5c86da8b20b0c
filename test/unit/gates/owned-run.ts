// The AnalysisRun `vm/ro-abc-3` and the Rollout `vm/ro` that owns it, whose pod template carries `annotations` (the
// spec document): what every gate that reads the owner's spec finds in the in-memory API.

import type { MemoryKube } from '../kube/memory-kube.ts';

export function ownedRun(kube: MemoryKube, annotations: Record<string, string>): MemoryKube {
  return kube
    .put({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AnalysisRun',
      metadata: {
        name: 'ro-abc-3',
        namespace: 'vm',
        ownerReferences: [
          { apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', name: 'ro', uid: 'u', controller: true },
        ],
      },
    })
    .put({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'ro', namespace: 'vm' },
      spec: { template: { metadata: { annotations } } },
    });
}
