// Reading a zone's VMCluster with its vmzones state, and the guarded writes of that state.

import type { KubeObject, KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { required, type StatusDocument } from '../step/outcome.ts';
import type { ZoneTarget } from '../step/target.ts';
import { describeCluster } from './messages.ts';
import { type ZoneState, zoneState } from './zone-annotations.ts';

export interface LoadedCluster {
  object: KubeObject;
  state: ZoneState;
  resourceVersion: string;
  generation: number;
}

export function loadedCluster(object: KubeObject): LoadedCluster {
  return {
    object,
    state: zoneState(object),
    resourceVersion: object.metadata.resourceVersion ?? '',
    generation: object.metadata.generation ?? 0,
  };
}

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

export interface ClusterPatch {
  annotations?: Record<string, string | null>;
  labels?: Record<string, string | null>;
  spec?: Record<string, unknown>;
}

/** One merge patch of metadata (and spec), refused by the API server (409) if the VMCluster changed since read. */
export async function patchCluster(
  kube: KubeObjects,
  ref: ObjectRef,
  patch: ClusterPatch,
  resourceVersion: string | undefined,
  dryRun = false,
): Promise<KubeObject> {
  const metadata: Record<string, unknown> = {};
  if (patch.annotations) metadata.annotations = patch.annotations;
  if (patch.labels) metadata.labels = patch.labels;
  const body: Record<string, unknown> = { metadata };
  if (patch.spec) body.spec = patch.spec;
  return kube.mergePatch(ref, body, resourceVersion, { dryRun });
}
