// A KubeObjects that counts its requests and failures (by the KubeError kind that says whether a retry can help),
// created lazily like the plugins' own clients, so that a process without Kubernetes access still starts.

import { KubeError, type KubeObjects } from '../kube/objects.ts';
import type { ObserveMetrics } from './metrics.ts';

/** Resource kinds vmzones reads or writes; any other kind is counted as "other" (bounded label). */
const knownResources = new Set([
  'Rollout',
  'AnalysisRun',
  'VMCluster',
  'VMUser',
  'VMAuth',
  'VMAgent',
  'Secret',
  'ConfigMap',
  'Pod',
]);

export function countedKube(create: () => KubeObjects, metrics: ObserveMetrics): () => KubeObjects {
  let client: KubeObjects | undefined;
  const inner = () => {
    client ??= create();
    return client;
  };
  async function counted<T>(verb: string, kind: string, call: () => Promise<T>): Promise<T> {
    const resource = knownResources.has(kind) ? kind : 'other';
    metrics.kubeRequests.inc({ verb, resource });
    try {
      return await call();
    } catch (err) {
      metrics.kubeErrors.inc({ verb, resource, kind: err instanceof KubeError ? err.kind : 'client' });
      throw err;
    }
  }
  const wrapped: KubeObjects = {
    get: (ref) => counted('get', ref.kind, () => inner().get(ref)),
    mergePatch: (ref, patch, resourceVersion, options) =>
      counted(options?.dryRun ? 'patch-dry-run' : 'patch', ref.kind, () =>
        inner().mergePatch(ref, patch, resourceVersion, options),
      ),
    list: (apiVersion, kind, namespace, labelSelector) =>
      counted('list', kind, () => inner().list(apiVersion, kind, namespace, labelSelector)),
    create: (object) => counted('create', object.kind, () => inner().create(object)),
  };
  return () => wrapped;
}
