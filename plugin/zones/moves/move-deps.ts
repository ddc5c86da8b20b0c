// What every move works with: the zone's objects through each cluster's client, the clock, and how long it may wait
// inside a call. Its own module so that the moves (and the reconciler) share it without importing one another.

import type { Clock } from '../../goplugin/index.ts';
import type { ClusterClients } from '../../kube/cluster-registry.ts';
import type { KubeObjects } from '../../kube/objects.ts';

export interface MoveDeps extends Clock {
  /** The zone's objects, each in its own cluster (vm/cluster-routing.ts). */
  kube: KubeObjects;
  clusters: ClusterClients;
  /** How long to wait inside the call for quick evidence (the reconciler: 0, it looks again next pass). */
  inCallWaitMs?: number;
}
