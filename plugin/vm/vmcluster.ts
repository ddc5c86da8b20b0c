// VMCluster identity, and readiness as the VictoriaMetrics operator reports it for every zone kind (zone-kinds.ts).

import { type KubeObject, namespacedName, type ObjectRef } from '../kube/objects.ts';

export const vmApiVersion = 'operator.victoriametrics.com/v1beta1';

export function vmclusterRef(namespace: string, name: string): ObjectRef {
  return { apiVersion: vmApiVersion, kind: 'VMCluster', namespace, name };
}

export type ReadinessState = 'ready' | 'progressing' | 'failed' | 'paused';

export interface VMClusterReadiness {
  state: ReadinessState;
  /** Why, in words, for step messages and measurement values. */
  message: string;
  generation: number | undefined;
  observedGeneration: number | undefined;
  updateStatus: string | undefined;
  reason: string | undefined;
}

/**
 * Ready means `status.updateStatus == operational` at `status.observedGeneration >= metadata.generation`.
 * The operator writes observedGeneration on every status write, `expanding` included, so observedGeneration
 * alone never means done. `failed` is final until the spec changes. VMSingle and VLCluster statuses carry the
 * same fields (the operator's StatusMetadata), so the rule and this function serve every zone kind.
 */
export function vmclusterReadiness(cluster: KubeObject, atLeastGeneration?: number): VMClusterReadiness {
  const generation = cluster.metadata.generation;
  const status = cluster.status ?? {};
  const observedGeneration =
    typeof status.observedGeneration === 'number' ? status.observedGeneration : undefined;
  const updateStatus = typeof status.updateStatus === 'string' ? status.updateStatus : undefined;
  const reason = typeof status.reason === 'string' && status.reason !== '' ? status.reason : undefined;
  const wanted = Math.max(generation ?? 0, atLeastGeneration ?? 0);
  const base = { generation, observedGeneration, updateStatus, reason };
  const name = `${cluster.kind ?? 'VMCluster'} ${namespacedName(cluster.metadata)}`;
  const observedNow = observedGeneration !== undefined && observedGeneration >= wanted;

  if (updateStatus === 'failed' && observedNow) {
    return {
      ...base,
      state: 'failed',
      message: `${name} failed at generation ${observedGeneration}: ${reason ?? 'no reason given'}`,
    };
  }
  if (updateStatus === 'paused') {
    return {
      ...base,
      state: 'paused',
      message: `${name} is paused (spec.paused); the operator does not reconcile it`,
    };
  }
  if (updateStatus === 'operational' && observedNow) {
    return { ...base, state: 'ready', message: `${name} is operational at generation ${observedGeneration}` };
  }
  const waiting = !observedNow
    ? `the operator to observe generation ${wanted} (observed: ${observedGeneration ?? 'none'})`
    : `updateStatus operational (now: ${updateStatus ?? 'not set'})`;
  return { ...base, state: 'progressing', message: `${name} is not ready yet: waiting for ${waiting}` };
}
