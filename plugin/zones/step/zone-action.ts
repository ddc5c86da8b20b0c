// What every step action starts from: the zone's object read with its vmzones state (missing: a StepFailure naming
// the zone) and the status document naming the zone and its object.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { describeCluster } from '../state/messages.ts';
import type { ZoneState } from '../state/zone-annotations.ts';
import { type LoadedCluster, loadedCluster } from '../state/zone-object.ts';
import { required, type StatusDocument } from './outcome.ts';
import type { ZoneTarget } from './target.ts';

/** The VMCluster and its vmzones annotations; missing → StepFailure naming the zone. */
export async function loadCluster(kube: KubeObjects, ref: ObjectRef, zone: string): Promise<LoadedCluster> {
  return loadedCluster(
    await required(kube.get(ref), `${describeCluster(ref)} of zone ${zone} does not exist`),
  );
}

/** What every action starts from: the status document naming the zone and its VMCluster, and the cluster now. */
export interface ZoneActionStart {
  zone: string;
  name: string;
  status: StatusDocument;
  cluster: LoadedCluster;
  state: ZoneState;
}

export async function openZoneAction(
  kube: KubeObjects,
  target: ZoneTarget,
  action: string,
): Promise<ZoneActionStart> {
  const zone = target.config.zone;
  const cluster = await loadCluster(kube, target.cluster, zone);
  return {
    zone,
    name: describeCluster(target.cluster),
    status: { zone, action, vmcluster: `${target.cluster.namespace}/${target.cluster.name}` },
    cluster,
    state: cluster.state,
  };
}
