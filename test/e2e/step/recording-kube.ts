// A KubeObjects that records every call the plugin makes (verb, kind, namespace, name), so that the RBAC test can
// check the manifest against what the plugin really does.

import type { KubeObjects } from '../../../plugin/kube/objects.ts';

export interface KubeCall {
  verb: 'get' | 'list' | 'watch' | 'patch' | 'create';
  kind: string;
  namespace: string;
  name: string;
}

export function recordingKube(inner: KubeObjects, calls: KubeCall[]): KubeObjects {
  return {
    get(ref) {
      calls.push({ verb: 'get', kind: ref.kind, namespace: ref.namespace, name: ref.name });
      return inner.get(ref);
    },
    mergePatch(ref, patch, resourceVersion, options) {
      calls.push({ verb: 'patch', kind: ref.kind, namespace: ref.namespace, name: ref.name });
      return inner.mergePatch(ref, patch, resourceVersion, options);
    },
    list(apiVersion, kind, namespace, labelSelector) {
      calls.push({ verb: 'list', kind, namespace, name: '' });
      return inner.list(apiVersion, kind, namespace, labelSelector);
    },
    create(object) {
      calls.push({ verb: 'create', kind: object.kind, namespace: object.metadata.namespace ?? '', name: '' });
      return inner.create(object);
    },
  };
}
