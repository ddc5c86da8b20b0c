// The agents that write to zones (docs/zone-kinds.md, "Writes"): vmagent for metrics zones, vlagent for
// VictoriaLogs zones. Both are operator custom resources whose pods carry the operator's selector labels, and
// both keep one persistent queue per -remoteWrite.url on the VictoriaMetrics module's lib/persistentqueue, so
// the queue-drain rule is the same; what differs is the custom resource, the pod name label, the prefix of the
// per-URL series, and how the pod count is spelled.

import type { KubeObject, ObjectRef } from '../kube/objects.ts';
import { vlGroupVersion, vmGroupVersion } from './zone-kinds.ts';

export type WriterKindName = 'VMAgent' | 'VLAgent';

export interface WriterKind {
  readonly kind: WriterKindName;
  readonly apiVersion: string;
  /** Plural resource name, as RBAC rules and `kubectl get` name it. */
  readonly resource: string;
  /** The operator's `app.kubernetes.io/name` label of the agent's pods. */
  readonly podName: string;
  /** Prefix of the per-URL remote-write series (`<prefix>pending_data_bytes`, ...). */
  readonly seriesPrefix: string;
}

export const writerKinds: Readonly<Record<WriterKindName, WriterKind>> = {
  VMAgent: {
    kind: 'VMAgent',
    apiVersion: vmGroupVersion,
    resource: 'vmagents',
    podName: 'vmagent',
    seriesPrefix: 'vmagent_remotewrite_',
  },
  VLAgent: {
    kind: 'VLAgent',
    apiVersion: vlGroupVersion,
    resource: 'vlagents',
    podName: 'vlagent',
    seriesPrefix: 'vlagent_remotewrite_',
  },
};

export const defaultWriterKind: WriterKind = writerKinds.VMAgent;

export function writerRef(writer: WriterKind, namespace: string, name: string): ObjectRef {
  return { apiVersion: writer.apiVersion, kind: writer.kind, namespace, name };
}

/** The operator's selector labels of an agent's pods (operator VMAgent/VLAgent SelectorLabels). */
export function writerPodLabels(writer: WriterKind, name: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': writer.podName,
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/component': 'monitoring',
    'managed-by': 'vm-operator',
  };
}

/**
 * Pods the agent asks for; undefined where the node count decides. A VMAgent: replicaCount (default 1) times
 * shardCount (default 1), none in daemonSetMode. A VLAgent: replicaCount (default 1), none when its
 * k8sCollector runs it as a DaemonSet (operator api/operator/v1 VLAgentSpec).
 */
export function expectedWriterPods(writer: WriterKind, agent: KubeObject): number | undefined {
  const spec = agent.spec ?? {};
  const replicas = typeof spec.replicaCount === 'number' ? spec.replicaCount : 1;
  if (writer.kind === 'VLAgent') {
    const collector = spec.k8sCollector as { enabled?: unknown } | undefined;
    return collector?.enabled === true ? undefined : replicas;
  }
  if (spec.daemonSetMode === true) return undefined;
  const shards = typeof spec.shardCount === 'number' && spec.shardCount > 0 ? spec.shardCount : 1;
  return replicas * shards;
}
