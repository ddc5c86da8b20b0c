// One step acts on several clusters (docs/multicluster.md): the zone's object (a VMCluster, VMSingle or VLCluster,
// with its lease, rollback record, handoff) lives in the zone's cluster, the Rollout with its Events in the
// controller's own, and each read balancer (VMUser / Secret / ConfigMap, VMAuths and their pods) where its vmauth
// runs (vm/read-layer.ts reaches those through clusterClientFor). The actions keep one KubeObjects for the
// zone; this sends each call to the cluster its object lives in, by kind. With no cluster named the controller's
// own client is used as it is.

import {
  type ClusterClients,
  type ClusterRegistration,
  requireClusterNamespace,
} from '../kube/cluster-registry.ts';
import type { KubeObject, KubeObjects, ObjectRef } from '../kube/objects.ts';
import { zoneKindOf } from './zone-kinds.ts';

/** Where the Event is about: one regarding the zone's object goes next to it. */
function eventRegardsZoneObject(object: KubeObject): boolean {
  const regarding = object.regarding as { kind?: unknown } | undefined;
  return (
    object.kind === 'Event' && typeof regarding?.kind === 'string' && zoneKindOf(regarding.kind) !== undefined
  );
}

/** The client of a registered cluster, once it is known to let vmzones act in `namespace` there. */
export async function clusterClientFor(
  clusters: Pick<ClusterClients, 'client' | 'registration'>,
  cluster: string | undefined,
  namespace: string,
  what: string,
): Promise<KubeObjects> {
  const registration: ClusterRegistration | undefined = await clusters.registration(cluster);
  requireClusterNamespace(registration, namespace, what);
  return clusters.client(cluster);
}

/** The KubeObjects one zone's actions use; an unknown cluster is a ClusterRegistryError (a Failed step). */
export async function zoneKube(
  clusters: ClusterClients,
  hub: KubeObjects,
  zoneCluster: string | undefined,
  namespace: string,
): Promise<KubeObjects> {
  if (zoneCluster === undefined) return hub;
  const zone = await clusterClientFor(clusters, zoneCluster, namespace, "the zone's object");
  const route = (kind: string): KubeObjects => (zoneKindOf(kind) !== undefined ? zone : hub);
  return {
    get: (ref: ObjectRef) => route(ref.kind).get(ref),
    mergePatch: (ref, patch, rv, options) => route(ref.kind).mergePatch(ref, patch, rv, options),
    list: (apiVersion, kind, ns, selector) => route(kind).list(apiVersion, kind, ns, selector),
    create: (object) => (eventRegardsZoneObject(object) ? zone : route(object.kind)).create(object),
  };
}
