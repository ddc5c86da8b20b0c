// One step acts on up to three clusters (docs/multicluster.md): the zone's object (a VMCluster, VMSingle or
// VLCluster, with its lease, rollback record, handoff) lives in the zone's cluster, the read balancer (VMUser /
// Secret / ConfigMap, VMAuths and their pods) in the vmauth's cluster, and the Rollout with its Events in the controller's own. The actions keep one
// KubeObjects; this sends each call to the cluster its object lives in, by kind. With no cluster named anywhere
// the controller's own client is used as it is.

import {
  type ClusterClients,
  type ClusterRegistration,
  requireClusterNamespace,
} from '../kube/cluster-registry.ts';
import type { KubeObject, KubeObjects, ObjectRef } from '../kube/objects.ts';
import { zoneKindOf } from '../vm/zone-kinds.ts';

/** Kinds that live with the Rollout, in the controller's own cluster. */
const hubKinds = new Set(['Rollout', 'AnalysisRun', 'Event']);

export interface ZoneClusters {
  /** The cluster of the zone's object (undefined = the controller's own). */
  zone: string | undefined;
  /** The cluster of the read balancer (the spec document's vmauth.cluster). */
  reads: string | undefined;
}

/** Where the Event is about: one regarding the zone's object goes next to it. */
function eventRegardsZoneObject(object: KubeObject): boolean {
  const regarding = object.regarding as { kind?: unknown } | undefined;
  return (
    object.kind === 'Event' && typeof regarding?.kind === 'string' && zoneKindOf(regarding.kind) !== undefined
  );
}

/** Checks that each named cluster is registered and lets vmzones act in `namespace` there. */
async function checkedClient(
  clusters: ClusterClients,
  cluster: string | undefined,
  namespace: string,
  what: string,
): Promise<KubeObjects> {
  const registration: ClusterRegistration | undefined = await clusters.registration(cluster);
  requireClusterNamespace(registration, namespace, what);
  return clusters.client(cluster);
}

/** The KubeObjects one zone's actions use; unknown clusters are a ClusterRegistryError (a Failed step). */
export async function zoneKube(
  clusters: ClusterClients,
  hub: KubeObjects,
  where: ZoneClusters,
  namespace: string,
): Promise<KubeObjects> {
  if (where.zone === undefined && where.reads === undefined) return hub;
  const zone = await checkedClient(clusters, where.zone, namespace, "the zone's object");
  const reads = await checkedClient(clusters, where.reads, namespace, 'the read balancer (vmauth)');
  const route = (kind: string): KubeObjects =>
    zoneKindOf(kind) !== undefined ? zone : hubKinds.has(kind) ? hub : reads;
  return {
    get: (ref: ObjectRef) => route(ref.kind).get(ref),
    mergePatch: (ref, patch, rv, options) => route(ref.kind).mergePatch(ref, patch, rv, options),
    list: (apiVersion, kind, ns, selector) => route(kind).list(apiVersion, kind, ns, selector),
    create: (object) => (eventRegardsZoneObject(object) ? zone : route(object.kind)).create(object),
    // Pods are read where the read balancer runs: a scrape of its vmauth pods takes that cluster's pod access.
    ...(reads.registration === undefined ? {} : { registration: reads.registration }),
  };
}
